#include "services/flow/profile_policy.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/cluster/resource_vector.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_walk.h"
#include "services/flow/terms/locality_term.h"
#include "services/flow/terms/model_affinity_term.h"
#include "services/flow/terms/pack_term.h"
#include "services/flow/terms/preferred_labels_term.h"
#include "services/flow/terms/spread_term.h"

namespace flowsched::flow {
namespace {

// A rack holding at least this share of a shape's input, though not the
// most, also offers the shape its room before the rotation (after its own
// shapes): Quincy's preferred-rack threshold (delta_rack, SOSP 2009).
constexpr double kSecondRackShare = 0.1;

}  // namespace

absl::Status CheckProfile(const ProfileParams& params) {
  for (const auto& [name, weight] :
       {std::pair<const char*, int64_t>{"spread", params.spread},
        {"pack", params.pack},
        {"preferred_labels", params.preferred_labels},
        {"model_affinity", params.model_affinity},
        {"locality", params.locality}}) {
    if (weight < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " must not be negative, got ", weight));
    }
  }
  const int64_t dearest =
      params.spread + params.pack + params.model_affinity + params.locality;
  if (params.unscheduled_cost <= dearest) {
    return absl::InvalidArgumentError(
        absl::StrCat("unscheduled_cost (", params.unscheduled_cost,
                     ") must exceed the dearest placement, spread + pack + "
                     "model_affinity + locality = ",
                     dearest, ", or a task that fits could wait for ever"));
  }
  return absl::OkStatus();
}

ProfilePolicy::ProfilePolicy(ProfileParams params, std::string name)
    : params_(params),
      name_(std::move(name)),
      waiting_(/*by_input_rack=*/params.locality > 0) {
  const auto add = [this](int64_t weight, std::unique_ptr<PlacementTerm> term) {
    if (weight == 0) return;
    depends_on_k_ = depends_on_k_ || term->depends_on_k();
    terms_.push_back({weight, std::move(term)});
  };
  add(params_.spread, std::make_unique<SpreadTerm>());
  add(params_.pack, std::make_unique<PackTerm>());
  add(params_.preferred_labels, std::make_unique<PreferredLabelsTerm>());
  add(params_.model_affinity, std::make_unique<ModelAffinityTerm>());
  add(params_.locality, std::make_unique<LocalityTerm>());
}

int64_t ProfilePolicy::PlacementCost(const cluster::Machine& machine,
                                     const RequestShape& shape,
                                     int64_t k) const {
  int64_t cost = 0;
  for (const WeightedTerm& weighted : terms_) {
    cost += std::llround(weighted.term->Value(machine, shape, k) *
                         static_cast<double>(weighted.weight));
  }
  return cost;
}

int64_t ProfilePolicy::WaitingCost(const cluster::Task& task,
                                   const cluster::ClusterState& state) const {
  if (params_.priority_step == 0) return params_.unscheduled_cost;
  int64_t priority = task.spec.priority;
  if (const cluster::Job* job = state.FindJob(task.job); job != nullptr) {
    priority = std::max<int64_t>(priority, job->priority);
  }
  return params_.unscheduled_cost +
         params_.priority_step *
             std::clamp<int64_t>(priority, 0, params_.max_priority);
}

absl::Status ProfilePolicy::Sync(const cluster::ChangeSet& changes,
                                 const cluster::ClusterState& state,
                                 const SyncContext& context,
                                 NetworkBuilder& builder) {
  // Machines: slots to the sink (running tasks arrive directly).
  FLOWSCHED_RETURN_IF_ERROR(SyncMachinesAndJobsToSink(changes, state, builder));

  // Shapes of the waiting tasks, in key order (deterministic).
  FLOWSCHED_ASSIGN_OR_RETURN(
      const ShapeClasses classes,
      SyncShapeClasses(
          waiting_, changes, state,
          [&](const cluster::Task& task) { return WaitingCost(task, state); },
          params_.preemption_cost, builder));
  // The reservations walk the machines whatever changed: left to the
  // Refresh before the next solve when one follows.
  if (context.refresh_follows) {
    reservations_owed_ = true;
  } else {
    FLOWSCHED_RETURN_IF_ERROR(
        Reserve(state, classes.shapes, classes.nodes, context.now_us, builder));
    reservations_owed_ = false;
  }
  return DrainTasksAtSink(builder);
}

absl::Status ProfilePolicy::Refresh(const cluster::ClusterState& state,
                                    const SyncContext& context,
                                    NetworkBuilder& builder) {
  if (!waiting_.tracking()) {
    // A fresh policy over a restored network: what its first Sync derives.
    return Sync(cluster::ChangeSet{}, state, SyncContext{context.now_us},
                builder);
  }
  const std::optional<std::vector<RequestShape>> shapes =
      waiting_.ShapesToReserve(state, context.now_us,
                               params_.gang_first_after_s, starving_,
                               reservations_owed_);
  if (!shapes) return absl::OkStatus();
  FLOWSCHED_RETURN_IF_ERROR(Reserve(state, *shapes,
                                    EnsureShapeNodes(*shapes, builder),
                                    context.now_us, builder));
  reservations_owed_ = false;
  return absl::OkStatus();
}

absl::Status ProfilePolicy::Reserve(const cluster::ClusterState& state,
                                    const std::vector<RequestShape>& shapes,
                                    const std::map<std::string, NodeId>& nodes,
                                    int64_t now_us, NetworkBuilder& builder) {
  for (WeightedTerm& weighted : terms_) weighted.term->Prepare(state);
  StarvingFirst starving(shapes, now_us, params_.gang_first_after_s);
  starving_ = starving.Keys(shapes);
  // The shapes whose input is in each rack, and the rack's machines
  // (locality profiles only).
  struct RackShapes {
    std::vector<std::pair<bool, size_t>> shapes;  // (rack is not its first, i)
    size_t machines = 0;
    size_t seen = 0;  // machines of the rack offered so far
  };
  std::map<std::string_view, RackShapes> by_rack;
  if (params_.locality > 0) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      const std::vector<RackShare>& racks = shapes[i].input_racks;
      for (size_t r = 0; r < racks.size(); ++r) {
        if (r == 0 || racks[r].share >= kSecondRackShare) {
          by_rack[racks[r].rack].shapes.push_back({r != 0, i});
        }
      }
    }
    for (const auto& [id, machine] : state.machines()) {
      if (auto rack = by_rack.find(machine.rack); rack != by_rack.end()) {
        ++rack->second.machines;
      }
    }
    // The shapes whose input is mostly there first; then largest first (by
    // the dominant share of the largest machine), as first-fit decreasing
    // packs: small shapes offered first fill a rack's machines in pieces
    // the large ones then fit nowhere.
    const cluster::ResourceVector max_spec = cluster::ComputeMaxSpec(state);
    const auto dominant_share = [&](size_t i) {
      const cluster::Resources& r = shapes[i].ask.request;
      return std::max(
          static_cast<double>(r.cpu_millis) / max_spec.cpu_millis,
          static_cast<double>(r.memory_bytes) / max_spec.memory_bytes);
    };
    for (auto& [rack, local] : by_rack) {
      std::stable_sort(local.shapes.begin(), local.shapes.end(),
                       [&](const auto& a, const auto& b) {
                         if (a.first != b.first) return b.first;
                         return dominant_share(a.second) >
                                dominant_share(b.second);
                       });
    }
  }
  // Class -> machine arcs by reservation (request_shapes.h).
  std::map<std::string, std::vector<DesiredArc>> class_arcs;
  size_t machine_index = 0;
  for (const auto& entry : state.machines()) {
    // Not a structured binding: clang 14 cannot capture one in a lambda.
    const cluster::Machine& machine = entry.second;
    const NodeId machine_node = builder.FindMachineNode(entry.first);
    // A copy: reservations on this machine may close a starving shape.
    // Then the shapes whose input is in the machine's rack.
    std::vector<size_t> first(starving.open().begin(), starving.open().end());
    // Each machine of the rack starts its rack's list at its own offset,
    // spread over the list (profile_policy.h says why).
    if (auto local = by_rack.find(machine.rack); local != by_rack.end()) {
      RackShapes& rack = local->second;
      const auto starving_end = static_cast<std::ptrdiff_t>(first.size());
      const size_t own = static_cast<size_t>(
          std::partition_point(rack.shapes.begin(), rack.shapes.end(),
                               [](const auto& s) { return !s.first; }) -
          rack.shapes.begin());
      // The rack's own shapes, then the others, each from this machine's
      // offset.
      for (const auto& [begin, n] :
           {std::pair<size_t, size_t>{0, own},
            std::pair<size_t, size_t>{own, rack.shapes.size() - own}}) {
        const size_t start = rack.seen * n / rack.machines;
        for (size_t j = 0; j < n; ++j) {
          const size_t i = rack.shapes[begin + (start + j) % n].second;
          if (std::find(first.begin(), first.begin() + starving_end, i) ==
              first.begin() + starving_end) {
            first.push_back(i);
          }
        }
      }
      ++rack.seen;
    }
    ReserveMachine(
        machine, state, shapes, machine_index++,
        [&](size_t i, int64_t n) {
          starving.Reserved(i, n);
          const RequestShape& shape = shapes[i];
          DesiredArc arc{machine_node,
                         depends_on_k_ ? 1 : n,
                         PlacementCost(machine, shape, 1),
                         {}};
          if (depends_on_k_) {
            // Convex pieces: the k-th task costs the price after k tasks;
            // beyond kMaxArcSegments the last piece takes the rest.
            const int64_t pieces =
                std::min<int64_t>(n, static_cast<int64_t>(kMaxArcSegments) + 1);
            for (int64_t k = 2; k <= pieces; ++k) {
              arc.extra_segments.push_back({k == pieces ? n - k + 1 : 1,
                                            PlacementCost(machine, shape, k)});
            }
          }
          class_arcs[shape.key].push_back(std::move(arc));
        },
        nullptr, first, params_.max_tasks_per_machine);
  }
  // Classes without waiting tasks go (their in-arcs went with the tasks).
  return SetShapeArcs(nodes, class_arcs, builder);
}

}  // namespace flowsched::flow
