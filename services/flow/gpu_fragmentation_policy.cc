#include "services/flow/gpu_fragmentation_policy.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/cluster/resource_fit.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_walk.h"

namespace flowsched::flow {
namespace {

// The gate aggregator of a machine (kind kRack: this policy has no racks,
// and shape classes own kEquivalenceClass).
// Resolution of the first-fit tie-break: the score is scaled by it, so the
// rank only orders machines of equal score.
constexpr int64_t kRankRange = 10'000;

uint64_t GateKey(MachineId machine) {
  return NetworkBuilder::StableKey(
      absl::StrCat("gpu-fgd-gate|", machine.value()));
}

}  // namespace

void GpuFragmentationPolicy::RefreshWorkload(
    const cluster::ClusterState& state) {
  const size_t tasks = state.tasks().size();
  const size_t moved = tasks > workload_tasks_ ? tasks - workload_tasks_
                                               : workload_tasks_ - tasks;
  if (workload_built_ && moved * 20 < workload_tasks_) return;
  std::vector<cluster::TaskSpec> specs;
  specs.reserve(tasks);
  for (const auto& entry : state.tasks()) specs.push_back(entry.second.spec);
  workload_ = cluster::TargetWorkload::Build(specs, params_.workload_coverage);
  workload_tasks_ = tasks;
  workload_built_ = true;
}

int64_t GpuFragmentationPolicy::PlacementCost(
    const cluster::Machine& machine, const RequestShape& shape,
    const std::vector<cluster::DeviceShare>& devices, int64_t rank) const {
  const double delta =
      cluster::FragmentationDelta(machine, workload_, shape.ask, devices);
  if (params_.score_levels == 0) {
    return static_cast<int64_t>(std::llround(delta));
  }
  const double levels = static_cast<double>(params_.score_levels);
  const auto score = static_cast<int64_t>(
      std::floor(levels / (1.0 + std::exp(delta / 1000.0))));
  return (params_.score_levels - score) * kRankRange +
         (params_.first_fit != 0 ? rank : 0);
}

absl::Status GpuFragmentationPolicy::Sync(const cluster::ChangeSet& changes,
                                          const cluster::ClusterState& state,
                                          const SyncContext& /*context*/,
                                          NetworkBuilder& builder) {
  builder.EnsureSink();
  FLOWSCHED_RETURN_IF_ERROR(SyncAllMachinesToSink(changes, state, builder));
  FLOWSCHED_RETURN_IF_ERROR(SyncJobsToSink(changes, state, builder));
  RefreshWorkload(state);

  const std::optional<cluster::ChangeSet> widened =
      waiting_.Track(changes, state);
  const std::vector<RequestShape> shapes = waiting_.Shapes(state);
  const std::map<std::string, NodeId> class_nodes =
      EnsureShapeNodes(shapes, builder);

  FLOWSCHED_RETURN_IF_ERROR(SyncChangedTasks(
      widened ? *widened : changes, state, builder,
      [&](const cluster::Task& task, NodeId node, const TaskEnds& ends) {
        std::vector<DesiredArc> arcs;
        if (task.running()) {
          arcs.push_back({ends.machine, 1, 0, {}});
          arcs.push_back({ends.job, 1, params_.preemption_cost, {}});
        } else {
          FLOWSCHED_ASSIGN_OR_RETURN(const NodeId shape,
                                     ShapeNodeOf(task, state, class_nodes));
          arcs.push_back({shape, 1, 0, {}});
          arcs.push_back({ends.job, 1, params_.unscheduled_cost, {}});
        }
        return builder.SetOutArcs(node, arcs);
      }));

  // A gate per machine with a free slot and a waiting task that fits it;
  // an arc from each shape that fits, priced by its fragmentation delta.
  std::map<std::string, std::vector<DesiredArc>> class_arcs;
  std::set<uint64_t> live_gates;
  const auto machine_count = static_cast<int64_t>(state.machines().size());
  int64_t index = -1;
  for (const auto& entry : state.machines()) {
    ++index;
    const cluster::Machine& machine = entry.second;
    if (shapes.empty() || machine.free_slots() == 0) continue;
    std::optional<NodeId> gate;
    for (size_t i = 0; i < shapes.size(); ++i) {
      bool fits = false;
      MachineRoom room(machine);
      bool offered = false;
      room.Offer(
          state, shapes,
          [&]() -> std::optional<size_t> {
            if (offered) return std::nullopt;
            offered = true;
            return i;
          },
          [&](size_t, int64_t n) { fits = n > 0; });
      if (!fits) continue;
      const cluster::Fit fit = cluster::FitTask(machine, shapes[i].ask);
      if (!fit.fits()) continue;  // MachineRoom and FitTask agree; defensive
      if (!gate.has_value()) {
        const uint64_t key = GateKey(entry.first);
        gate = builder.EnsureAggregatorNode(NodeKind::kRack, key);
        live_gates.insert(key);
        FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(
            *gate, {{builder.FindMachineNode(entry.first), 1, 0, {}}}));
      }
      class_arcs[shapes[i].key].push_back(
          {*gate,
           1,
           PlacementCost(machine, shapes[i], fit.devices,
                         index * kRankRange / machine_count),
           {}});
    }
  }
  FLOWSCHED_RETURN_IF_ERROR(SetShapeArcs(class_nodes, class_arcs, builder));
  RemoveAggregatorsExcept(NodeKind::kRack, live_gates, builder);
  return DrainTasksAtSink(builder);
}

}  // namespace flowsched::flow
