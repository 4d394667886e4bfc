#include "services/flow/load_spreading_policy.h"

#include <algorithm>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"

namespace flowsched::flow {

absl::Status LoadSpreadingPolicy::Sync(const cluster::ChangeSet& changes,
                                       const cluster::ClusterState& state,
                                       const SyncContext& /*context*/,
                                       NetworkBuilder& builder) {
  FlowNetwork& network = builder.network();
  const NodeId sink = builder.EnsureSink();
  const NodeId aggregator = builder.EnsureClusterAggregator();

  // Jobs and machines first: task arcs point at their nodes.
  for (JobId job_id : changes.jobs) {
    const cluster::Job* job = state.FindJob(job_id);
    if (job == nullptr) {
      builder.RemoveJobNode(job_id);
      continue;
    }
    const NodeId node = builder.EnsureJobNode(job_id);
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(
        node, {{sink, static_cast<int64_t>(job->tasks.size()), 0}}));
  }
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
  for (TaskId task_id : changes.tasks) {
    const cluster::Task* task = state.FindTask(task_id);
    if (task == nullptr) {
      builder.RemoveTaskNode(task_id);
      continue;
    }
    const NodeId node = builder.EnsureTaskNode(task_id, 1, task->machine);
    const NodeId job_node = builder.FindJobNode(task->job);
    if (job_node == kNoNode) {
      return absl::InternalError(absl::StrCat(
          "task ", task_id.value(), " has no node for job ",
          task->job.value()));
    }
    std::vector<DesiredArc> arcs;
    if (task->running()) {
      const NodeId machine_node = builder.FindMachineNode(task->machine);
      if (machine_node == kNoNode) {
        return absl::InternalError(
            absl::StrCat("task ", task_id.value(), " runs on machine ",
                         task->machine.value(), " that has no node"));
      }
      arcs.push_back({job_node, 1, params_.preemption_cost});
      arcs.push_back({machine_node, 1, 0});
    } else {
      arcs.push_back({job_node, 1, params_.unscheduled_cost});
      arcs.push_back({aggregator, 1, 0});
    }
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, arcs));
  }
  // The sink drains one unit per task.
  return network.UpdateNode(
      sink, -static_cast<int64_t>(builder.task_node_count()), 0);
}

}  // namespace flowsched::flow
