#pragma once

// Placements kept from one round to the next and brought up to date from
// what changed, instead of walking every arc with flow each round
// (PlacementExtractor). Most of a scheduling network's flow is running
// tasks' arcs straight to their machines: such a task's placement changes
// only when one of its own arcs changes flow or its node changes. Flow
// through aggregators (X, racks, equivalence classes: tasks being placed)
// is walked again each round, but only those arcs. A round costs what
// changed plus the flow through aggregators, not the whole network, plus
// a scan of one bit per arc slot to find the aggregated arcs (a word per
// 64 slots).
//
// The placements equal PlacementExtractor's, task for task: the walk over
// the aggregators visits its nodes in the same order as the full walk
// (machines and other ready nodes by node id, then as they become ready;
// in-arcs by slot), and the arcs it leaves out (a task's straight to its
// machine, into an unscheduled aggregator, into the sink) hand nothing on
// to an aggregator. Flow outside that shape (into a task node, out of a
// machine, an unscheduled aggregator or the sink other than to the sink,
// from an aggregator into an unscheduled one) makes every round a full
// extraction while it lasts; so does FlowChangeLog::everything, and a
// round whose flow does not trace (the full extraction then names the
// error).
//
// Thread-safety: none.

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "services/flow/flow_network.h"
#include "services/flow/placement_extractor.h"

namespace flowsched::flow {

// What changed in a network and its flow since placements were last
// brought up to date; kept by whoever applies the changes and moves the
// flow (core::IncrementalMirror). Repeats are allowed.
struct FlowChangeLog {
  // Anything may have changed: the next update extracts in full.
  bool everything = true;
  std::vector<ArcSlot> slots;  // flow changed
  // The tails of those slots when their flow changed, and nodes added,
  // updated or removed.
  std::vector<NodeId> nodes;

  void Clear() {
    everything = false;
    slots.clear();
    nodes.clear();
  }
  void MarkEverything() {
    Clear();
    everything = true;
  }
};

class IncrementalPlacements {
 public:
  // Brings the placements up to date with `flow_by_slot` on `network`
  // (`slots_with_flow` as ExtractPlacements'), given that `log` holds what
  // changed since the last Update, and clears `log`. Errors are the full
  // extraction's; the next Update then extracts in full.
  absl::Status Update(const FlowNetwork& network,
                      const std::vector<int64_t>& flow_by_slot,
                      const std::vector<uint64_t>& slots_with_flow,
                      FlowChangeLog& log);

  // The tasks placed elsewhere than they run (machine_id != running_on),
  // node id ascending: what a round's decisions are made of.
  [[nodiscard]] const std::vector<TaskPlacement>& moved() const {
    return moved_;
  }
  [[nodiscard]] uint64_t tasks() const { return tasks_; }
  [[nodiscard]] uint64_t tasks_placed() const { return placed_; }
  // Whether the last Update extracted in full.
  [[nodiscard]] bool last_full() const { return last_full_; }
  // Every task's placement in node id order, as ExtractPlacements returns
  // them. O(nodes).
  [[nodiscard]] std::vector<TaskPlacement> All(
      const FlowNetwork& network) const;

 private:
  static constexpr uint32_t kNoLocal = ~uint32_t{0};

  absl::Status Rebuild(const FlowNetwork& network,
                       const std::vector<int64_t>& flow_by_slot,
                       const std::vector<uint64_t>& slots_with_flow);
  // Sets the aggregated-flow bits of the logged slots; false if one of
  // them carries flow outside the shape this class follows.
  bool MarkLoggedSlots(const FlowNetwork& network,
                       const std::vector<int64_t>& flow_by_slot,
                       const FlowChangeLog& log);
  // The walk over the arcs with aggregated flow; false if it does not
  // trace (some task's flow is never handed a machine).
  bool WalkAggregatedFlow(const FlowNetwork& network,
                          const std::vector<int64_t>& flow_by_slot);
  uint32_t LocalOf(NodeId node);
  // Re-reads task `node`'s placement; false if it reaches more than one
  // unit of machines.
  bool Evaluate(const FlowNetwork& network,
                const std::vector<int64_t>& flow_by_slot, NodeId node);
  void ToEvaluate(NodeId node);
  void SetMoved(NodeId node, bool moved);
  void CollectMoved(const FlowNetwork& network);
  void Resize(const FlowNetwork& network);

  // Per node: the machine entity a task is placed on (0: none), whether it
  // was a task at the last Update, and whether it is in moved_.
  std::vector<uint64_t> placed_on_;
  std::vector<uint8_t> is_task_;
  std::vector<uint8_t> moved_flag_;
  std::vector<NodeId> moved_nodes_;  // may hold stale entries and repeats
  std::vector<TaskPlacement> moved_;
  uint64_t tasks_ = 0;
  uint64_t placed_ = 0;
  bool last_full_ = false;
  // Flow the walk cannot follow was seen at the last full extraction.
  bool outside_shape_ = false;
  bool need_full_ = true;
  // Bit s: slot s carries flow into an aggregator or out of one into a
  // machine (the walk's arcs).
  std::vector<uint64_t> aggregated_;
  std::vector<NodeId> aggregated_tasks_;  // reached through aggregators
  // Nodes to re-read this Update, with their marks.
  std::vector<NodeId> evaluate_;
  std::vector<uint8_t> evaluate_flag_;
  // The walk over the aggregated arcs, on local indices of the nodes it
  // touches.
  std::vector<uint32_t> local_;  // per node, kNoLocal when untouched
  std::vector<NodeId> locals_;
  std::vector<std::pair<uint32_t, FlowWalk::InArc>> walk_arcs_;  // by head
  std::vector<uint32_t> cursor_;
  FlowWalk walk_;
  PlacementExtractor full_;
};

}  // namespace flowsched::flow
