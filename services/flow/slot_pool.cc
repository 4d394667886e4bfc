#include "services/flow/slot_pool.h"

#include <algorithm>
#include <span>
#include <vector>

#include "services/flow/graph_change.h"
#include "services/flow/request_shapes.h"

namespace flowsched::flow {

absl::Status SetSlotPoolArc(const cluster::Machine& machine, NodeId pool,
                            NodeId node, int64_t per_task_cost,
                            int64_t max_tasks, FlowNetwork& network,
                            bool open) {
  int64_t slots = static_cast<int64_t>(machine.task_slots);
  if (max_tasks > 0) slots = std::min(slots, max_tasks);
  const auto running = static_cast<int64_t>(machine.running.size());
  // One fixed-cost piece per slot, open iff the slot is free: closed
  // pieces below `running` keep every piece at the same position, so a
  // start or finish changes one piece.
  const auto pieces = static_cast<size_t>(
      std::min<int64_t>(slots, static_cast<int64_t>(kMaxArcSegments)));
  std::vector<ArcSegment> slot_pieces(std::max<size_t>(pieces, 1));
  for (size_t s = 0; s < pieces; ++s) {
    const auto slot = static_cast<int64_t>(s);
    const int64_t covered = s + 1 == pieces ? slots - slot : 1;
    slot_pieces[s] = {
        open ? std::clamp<int64_t>(slot + covered - running, 0, covered) : 0,
        per_task_cost * slot};
  }
  return network.SetArc(pool, node, slot_pieces[0].capacity,
                        slot_pieces[0].cost,
                        std::span<const ArcSegment>(slot_pieces).subspan(1));
}

absl::Status SetPreemptiblePoolArc(const cluster::Machine& machine, NodeId pool,
                                   NodeId node, int64_t per_task_cost,
                                   int64_t max_tasks, FlowNetwork& network) {
  const auto slots = static_cast<int64_t>(machine.task_slots);
  const int64_t running =
      std::min(slots, static_cast<int64_t>(machine.running.size()));
  const int64_t open =
      max_tasks > 0 ? std::min(slots, std::max(max_tasks, running)) : slots;
  const int64_t free_slots = open - running;
  std::vector<ArcSegment> pieces;
  for (int64_t k = 1; k <= free_slots && pieces.size() < kMaxArcSegments; ++k) {
    pieces.push_back({1, per_task_cost * (running + k)});
  }
  if (!pieces.empty()) {
    pieces.back().capacity += free_slots - static_cast<int64_t>(pieces.size());
  }
  // The last free piece costs at most per_task_cost * slots (running +
  // free_slots <= slots), so the pieces stay convex.
  // Displacing keeps the count: offered while it is within the limit.
  if (running > 0 && (max_tasks <= 0 || running <= max_tasks)) {
    pieces.push_back({running, per_task_cost * slots});
  }
  if (pieces.empty()) pieces.push_back({0, 0});
  return network.SetArc(pool, node, pieces.front().capacity,
                        pieces.front().cost,
                        std::span<const ArcSegment>(pieces).subspan(1));
}

bool SlotPoolUsers::Track(const cluster::ChangeSet& changes,
                          const cluster::ClusterState& state, bool all) {
  const bool before = any();
  const auto track = [&](TaskId id, const cluster::Task* task) {
    if (task != nullptr && !AsksForRoom(*task, state)) {
      tasks_.insert(id);
    } else {
      tasks_.erase(id);
    }
  };
  if (all) {
    tasks_.clear();
    for (const auto& [id, task] : state.tasks()) track(id, &task);
    return true;
  }
  for (TaskId id : changes.tasks) track(id, state.FindTask(id));
  return any() != before;
}

}  // namespace flowsched::flow
