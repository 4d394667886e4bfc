#include "services/flow/policy_walk.h"

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"

namespace flowsched::flow {

absl::Status SyncJobsToSink(const cluster::ChangeSet& changes,
                            const cluster::ClusterState& state,
                            NetworkBuilder& builder) {
  const NodeId sink = builder.EnsureSink();
  for (JobId id : changes.jobs) {
    const cluster::Job* job = state.FindJob(id);
    if (job == nullptr) {
      builder.RemoveJobNode(id);
      continue;
    }
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(
        builder.EnsureJobNode(id),
        {{sink, static_cast<int64_t>(job->tasks.size()), 0}}));
  }
  return absl::OkStatus();
}

absl::Status SyncAllMachinesToSink(const cluster::ChangeSet& changes,
                                   const cluster::ClusterState& state,
                                   NetworkBuilder& builder) {
  const NodeId sink = builder.EnsureSink();
  for (MachineId id : changes.machines) {
    if (state.FindMachine(id) == nullptr) builder.RemoveMachineNode(id);
  }
  for (const auto& [id, machine] : state.machines()) {
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(
        builder.EnsureMachineNode(id),
        {{sink, static_cast<int64_t>(machine.task_slots), 0}}));
  }
  return absl::OkStatus();
}

absl::Status SyncChangedMachines(
    const cluster::ChangeSet& changes, const cluster::ClusterState& state,
    NetworkBuilder& builder,
    const std::function<absl::Status(const cluster::Machine&, NodeId)>& sync) {
  for (MachineId id : changes.machines) {
    const cluster::Machine* machine = state.FindMachine(id);
    if (machine == nullptr) {
      builder.RemoveMachineNode(id);
      continue;
    }
    FLOWSCHED_RETURN_IF_ERROR(sync(*machine, builder.EnsureMachineNode(id)));
  }
  return absl::OkStatus();
}

absl::Status SyncChangedTasks(
    const cluster::ChangeSet& changes, const cluster::ClusterState& state,
    NetworkBuilder& builder,
    const std::function<absl::Status(const cluster::Task&, NodeId,
                                     const TaskEnds&)>& sync) {
  for (TaskId id : changes.tasks) {
    const cluster::Task* task = state.FindTask(id);
    if (task == nullptr) {
      builder.RemoveTaskNode(id);
      continue;
    }
    const NodeId node = builder.EnsureTaskNode(id, 1, task->machine);
    TaskEnds ends;
    ends.job = builder.FindJobNode(task->job);
    if (ends.job == kNoNode) {
      return absl::InternalError(absl::StrCat(
          "task ", id.value(), " has no node for job ", task->job.value()));
    }
    if (task->running()) {
      ends.machine = builder.FindMachineNode(task->machine);
      if (ends.machine == kNoNode) {
        return absl::InternalError(
            absl::StrCat("task ", id.value(), " runs on machine ",
                         task->machine.value(), " that has no node"));
      }
    }
    FLOWSCHED_RETURN_IF_ERROR(sync(*task, node, ends));
  }
  return absl::OkStatus();
}

absl::Status SyncMachinesAndJobsToSink(const cluster::ChangeSet& changes,
                                       const cluster::ClusterState& state,
                                       NetworkBuilder& builder) {
  FLOWSCHED_RETURN_IF_ERROR(SyncAllMachinesToSink(changes, state, builder));
  return SyncJobsToSink(changes, state, builder);
}

void RemoveAggregatorsExcept(NodeKind kind, const std::set<uint64_t>& live,
                             NetworkBuilder& builder) {
  for (uint64_t key : builder.AggregatorKeys(kind)) {
    if (!live.contains(key)) builder.RemoveAggregatorNode(kind, key);
  }
}

absl::Status DrainTasksAtSink(NetworkBuilder& builder, int64_t extra) {
  return builder.network().UpdateNode(
      builder.sink(),
      -(static_cast<int64_t>(builder.task_node_count()) + extra), 0);
}

}  // namespace flowsched::flow
