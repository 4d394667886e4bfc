#include "services/core/task_arc_blocker.h"

#include <utility>

#include "services/common/status_macros.h"

namespace flowsched::core {

absl::Status TaskArcBlocker::Block(const flow::FlowNetwork& network,
                                   std::span<const flow::NodeId> tasks,
                                   const ApplyFn& apply) {
  std::vector<flow::GraphChange> open;
  for (flow::NodeId task : tasks) {
    if (network.node(task).running_on != 0) continue;
    if (!blocked_.insert(task).second) continue;
    network.ForEachOutArc(task, [&](const flow::ArcView& arc) {
      if (network.node(arc.dst).kind == flow::NodeKind::kJobUnscheduled) {
        return;
      }
      if (arc.capacity == 0 && arc.extra_segments.empty()) return;
      open.push_back({.type = flow::GraphChange::Type::kSetArc,
                      .src = arc.src,
                      .dst = arc.dst,
                      .capacity = arc.capacity,
                      .cost = arc.cost,
                      .extra_segments = {arc.extra_segments.begin(),
                                         arc.extra_segments.end()}});
    });
  }
  for (flow::GraphChange& arc : open) {
    flow::GraphChange closed{.type = flow::GraphChange::Type::kSetArc,
                             .src = arc.src,
                             .dst = arc.dst,
                             .capacity = 0,
                             .cost = arc.cost};
    saved_.push_back(std::move(arc));
    FLOWSCHED_RETURN_IF_ERROR(apply(closed));
  }
  return absl::OkStatus();
}

absl::Status TaskArcBlocker::Restore(const ApplyFn& apply) {
  absl::Status status;
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    status.Update(apply(*it));
  }
  saved_.clear();
  blocked_.clear();
  return status;
}

}  // namespace flowsched::core
