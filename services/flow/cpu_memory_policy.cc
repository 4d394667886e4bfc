#include "services/flow/cpu_memory_policy.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_walk.h"
#include "services/flow/request_shapes.h"

namespace flowsched::flow {
namespace {

// util_scale * the larger of CPU and memory utilisation with `k` more tasks
// of `request` on the machine.
int64_t LoadCost(const cluster::Machine& machine,
                 const cluster::Resources& request, int64_t k,
                 int64_t util_scale) {
  double utilisation = 0;
  const auto dim = [&](int64_t cap, int64_t alloc, int64_t req) {
    if (cap <= 0) return;
    utilisation = std::max(utilisation,
                           (static_cast<double>(alloc) +
                            static_cast<double>(k) * static_cast<double>(req)) /
                               static_cast<double>(cap));
  };
  dim(machine.capacity.cpu_millis, machine.allocated.cpu_millis,
      request.cpu_millis);
  dim(machine.capacity.memory_bytes, machine.allocated.memory_bytes,
      request.memory_bytes);
  return static_cast<int64_t>(std::llround(std::min(utilisation, 1.0) *
                                           static_cast<double>(util_scale)));
}

}  // namespace

std::string CpuMemoryPolicy::ClassText(const cluster::Task& task,
                                       const cluster::ClusterState& state) {
  return ShapeKey(task, state);
}

absl::Status CpuMemoryPolicy::Sync(const cluster::ChangeSet& changes,
                                   const cluster::ClusterState& state,
                                   const SyncContext& context,
                                   NetworkBuilder& builder) {
  // Machines: slots to the sink (running tasks arrive directly).
  FLOWSCHED_RETURN_IF_ERROR(SyncMachinesAndJobsToSink(changes, state, builder));

  // Shapes of the waiting tasks, in key order (deterministic).
  FLOWSCHED_ASSIGN_OR_RETURN(
      const ShapeClasses classes,
      SyncShapeClasses(waiting_, changes, state, params_.unscheduled_cost,
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

absl::Status CpuMemoryPolicy::Refresh(const cluster::ClusterState& state,
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

absl::Status CpuMemoryPolicy::Reserve(
    const cluster::ClusterState& state, const std::vector<RequestShape>& shapes,
    const std::map<std::string, NodeId>& nodes, int64_t now_us,
    NetworkBuilder& builder) {
  StarvingFirst starving(shapes, now_us, params_.gang_first_after_s);
  starving_ = starving.Keys(shapes);
  // Class -> machine arcs by reservation (request_shapes.h).
  std::map<std::string, std::vector<DesiredArc>> class_arcs;
  size_t machine_index = 0;
  for (const auto& entry : state.machines()) {
    // Not a structured binding: clang 14 cannot capture one in a lambda.
    const cluster::Machine& machine = entry.second;
    const NodeId machine_node = builder.FindMachineNode(entry.first);
    // A copy: reservations on this machine may close a starving shape.
    const std::vector<size_t> first(starving.open().begin(),
                                    starving.open().end());
    ReserveMachine(
        machine, state, shapes, machine_index++,
        [&](size_t i, int64_t n) {
          starving.Reserved(i, n);
          const RequestShape& shape = shapes[i];
          const int64_t discount =
              shape.preferred.empty() ||
                      !LabelsMatch(machine.labels, shape.preferred)
                  ? 0
                  : params_.preferred_discount;
          // Convex pieces: the k-th task costs the load after k tasks;
          // beyond kMaxArcSegments the last piece takes the rest.
          const int64_t pieces =
              std::min<int64_t>(n, static_cast<int64_t>(kMaxArcSegments) + 1);
          const cluster::Resources& request = shape.ask.request;
          DesiredArc arc{
              machine_node,
              1,
              LoadCost(machine, request, 1, params_.util_scale) - discount,
              {}};
          for (int64_t k = 2; k <= pieces; ++k) {
            arc.extra_segments.push_back(
                {k == pieces ? n - k + 1 : 1,
                 LoadCost(machine, request, k, params_.util_scale) - discount});
          }
          class_arcs[shape.key].push_back(std::move(arc));
        },
        nullptr, first);
  }
  // Classes without waiting tasks go (their in-arcs went with the tasks).
  return SetShapeArcs(nodes, class_arcs, builder);
}

}  // namespace flowsched::flow
