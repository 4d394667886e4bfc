#include "services/flow/priority_policy.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"

namespace flowsched::flow {

int64_t PriorityPolicy::EffectivePriority(
    const cluster::Task& task, const cluster::ClusterState& state) const {
  int32_t priority = task.spec.priority;
  if (const cluster::Job* job = state.FindJob(task.job); job != nullptr) {
    priority = std::max(priority, job->priority);
  }
  return std::clamp<int64_t>(priority, 0, params_.max_priority);
}

absl::Status PriorityPolicy::Sync(const cluster::ChangeSet& changes,
                                  const cluster::ClusterState& state,
                                  const SyncContext& /*context*/,
                                  NetworkBuilder& builder) {
  FlowNetwork& network = builder.network();
  const NodeId sink = builder.EnsureSink();
  const NodeId aggregator = builder.EnsureClusterAggregator();
  for (JobId job_id : changes.jobs) {
    const cluster::Job* job = state.FindJob(job_id);
    if (job == nullptr) {
      builder.RemoveJobNode(job_id);
      continue;
    }
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(
        builder.EnsureJobNode(job_id),
        {{sink, static_cast<int64_t>(job->tasks.size()), 0}}));
  }
  for (MachineId machine_id : changes.machines) {
    const cluster::Machine* machine = state.FindMachine(machine_id);
    if (machine == nullptr) {
      builder.RemoveMachineNode(machine_id);
      continue;
    }
    const NodeId node = builder.EnsureMachineNode(machine_id);
    const auto slots = static_cast<int64_t>(machine->task_slots);
    const auto running =
        std::min(slots, static_cast<int64_t>(machine->running.size()));
    const int64_t free_slots = slots - running;
    // Free slots first, at load-spreading prices; then the slots that only
    // open when running tasks leave, at the highest price.
    std::vector<ArcSegment> pieces;
    for (int64_t k = 1; k <= free_slots && pieces.size() < kMaxArcSegments;
         ++k) {
      pieces.push_back({1, params_.per_task_cost * (running + k)});
    }
    if (!pieces.empty()) {
      pieces.back().capacity += free_slots - static_cast<int64_t>(pieces.size());
    }
    if (running > 0) pieces.push_back({running, params_.per_task_cost * slots});
    if (pieces.empty()) pieces.push_back({0, 0});
    const ArcSegment first = pieces.front();
    pieces.erase(pieces.begin());
    // The cost of the last free slot can exceed per_task_cost * slots only
    // if running > slots, which the min above rules out.
    FLOWSCHED_RETURN_IF_ERROR(
        network.SetArc(aggregator, node, first.capacity, first.cost, pieces));
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
    const int64_t wait = WaitCost(EffectivePriority(*task, state));
    std::vector<DesiredArc> arcs;
    if (task->running()) {
      const NodeId machine_node = builder.FindMachineNode(task->machine);
      if (machine_node == kNoNode) {
        return absl::InternalError(
            absl::StrCat("task ", task_id.value(), " runs on machine ",
                         task->machine.value(), " that has no node"));
      }
      arcs.push_back({machine_node, 1, 0});
      arcs.push_back({job_node, 1, wait + params_.preemption_penalty});
      arcs.push_back({aggregator, 1, params_.migration_cost});
    } else {
      arcs.push_back({job_node, 1, wait});
      arcs.push_back({aggregator, 1, 0});
    }
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, arcs));
  }
  return network.UpdateNode(
      sink, -static_cast<int64_t>(builder.task_node_count()), 0);
}

}  // namespace flowsched::flow
