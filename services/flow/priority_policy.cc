#include "services/flow/priority_policy.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_walk.h"

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
  FLOWSCHED_RETURN_IF_ERROR(SyncJobsToSink(changes, state, builder));
  const auto sync_machine = [&](const cluster::Machine& machine,
                                NodeId node) -> absl::Status {
    const auto slots = static_cast<int64_t>(machine.task_slots);
    const auto running =
        std::min(slots, static_cast<int64_t>(machine.running.size()));
    const int64_t free_slots = slots - running;
    // Free slots first, at load-spreading prices; then the slots that only
    // open when running tasks leave, at the highest price.
    std::vector<ArcSegment> pieces;
    for (int64_t k = 1; k <= free_slots && pieces.size() < kMaxArcSegments;
         ++k) {
      pieces.push_back({1, params_.per_task_cost * (running + k)});
    }
    if (!pieces.empty()) {
      pieces.back().capacity +=
          free_slots - static_cast<int64_t>(pieces.size());
    }
    if (running > 0) {
      pieces.push_back({running, params_.per_task_cost * slots});
    }
    if (pieces.empty()) pieces.push_back({0, 0});
    const ArcSegment first = pieces.front();
    pieces.erase(pieces.begin());
    // The cost of the last free slot can exceed per_task_cost * slots only
    // if running > slots, which the min above rules out.
    FLOWSCHED_RETURN_IF_ERROR(
        network.SetArc(aggregator, node, first.capacity, first.cost, pieces));
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, {{sink, slots, 0}}));
    return absl::OkStatus();
  };
  FLOWSCHED_RETURN_IF_ERROR(
      SyncChangedMachines(changes, state, builder, sync_machine));
  FLOWSCHED_RETURN_IF_ERROR(SyncChangedTasks(
      changes, state, builder,
      [&](const cluster::Task& task, NodeId node, const TaskEnds& ends) {
        const int64_t wait = WaitCost(EffectivePriority(task, state));
        std::vector<DesiredArc> arcs;
        if (task.running()) {
          arcs.push_back({ends.machine, 1, 0});
          arcs.push_back({ends.job, 1, wait + params_.preemption_penalty});
          arcs.push_back({aggregator, 1, params_.migration_cost});
        } else {
          arcs.push_back({ends.job, 1, wait});
          arcs.push_back({aggregator, 1, 0});
        }
        return builder.SetOutArcs(node, arcs);
      }));
  return DrainTasksAtSink(builder);
}

}  // namespace flowsched::flow
