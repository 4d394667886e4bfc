#include "services/flow/load_spreading_policy.h"

#include <algorithm>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_walk.h"

namespace flowsched::flow {

absl::Status LoadSpreadingPolicy::Sync(const cluster::ChangeSet& changes,
                                       const cluster::ClusterState& state,
                                       const SyncContext& /*context*/,
                                       NetworkBuilder& builder) {
  FlowNetwork& network = builder.network();
  const NodeId sink = builder.EnsureSink();
  const NodeId aggregator = builder.EnsureClusterAggregator();

  // Jobs and machines first: task arcs point at their nodes.
  FLOWSCHED_RETURN_IF_ERROR(SyncJobsToSink(changes, state, builder));
  for (MachineId machine_id : changes.machines) {
    const cluster::Machine* machine = state.FindMachine(machine_id);
    if (machine == nullptr) {
      builder.RemoveMachineNode(machine_id);
      continue;
    }
    const NodeId node = builder.EnsureMachineNode(machine_id);
    const auto slots = static_cast<int64_t>(machine->task_slots);
    const auto running = static_cast<int64_t>(machine->running.size());
    // One fixed-cost piece per slot, open iff the slot is free (see the
    // header): the same convex function as repricing free-slot pieces by
    // the running count, but a start or finish changes one piece's
    // capacity, not every piece's cost. Closed pieces below `running` keep
    // every piece at the same position, so the change is one piece.
    const auto pieces = static_cast<size_t>(
        std::min<int64_t>(slots, static_cast<int64_t>(kMaxArcSegments)));
    std::vector<ArcSegment> slot_pieces(std::max<size_t>(pieces, 1));
    for (size_t s = 0; s < pieces; ++s) {
      const auto slot = static_cast<int64_t>(s);
      const int64_t covered = s + 1 == pieces ? slots - slot : 1;
      slot_pieces[s] = {std::clamp<int64_t>(slot + covered - running, 0,
                                            covered),
                        params_.per_task_cost * slot};
    }
    FLOWSCHED_RETURN_IF_ERROR(network.SetArc(
        aggregator, node, slot_pieces[0].capacity, slot_pieces[0].cost,
        std::span<const ArcSegment>(slot_pieces).subspan(1)));
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, {{sink, slots, 0}}));
  }
  FLOWSCHED_RETURN_IF_ERROR(SyncChangedTasks(
      changes, state, builder,
      [&](const cluster::Task& task, NodeId node, const TaskEnds& ends) {
        std::vector<DesiredArc> arcs;
        if (task.running()) {
          arcs.push_back({ends.job, 1, params_.preemption_cost});
          arcs.push_back({ends.machine, 1, 0});
        } else {
          arcs.push_back({ends.job, 1, params_.unscheduled_cost});
          arcs.push_back({aggregator, 1, 0});
        }
        return builder.SetOutArcs(node, arcs);
      }));
  return DrainTasksAtSink(builder);
}

}  // namespace flowsched::flow
