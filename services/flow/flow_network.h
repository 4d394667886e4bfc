#pragma once

// The flow network the graph manager maintains and the solver worker
// mirrors. Nodes are dense slot ids that are reused after removal; arcs are
// identified by (src, dst) with O(1) lookup, and kept in contiguous slots
// threaded on per-node intrusive lists so that adding or removing an arc is
// O(1) even at the cluster aggregator with 150,000 in-arcs.
//
// Every mutation can be recorded as a GraphChange (the delta for the next
// solver round); a change that sets the value an element already has is not
// recorded, so only real changes reach the solver.
//
// Thread-safety: none. Owned by one service loop.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/flow/graph_change.h"
#include "services/solver/mcmf_problem.h"

namespace flowsched::flow {

using ArcSlot = uint32_t;

struct ArcView {
  ArcSlot slot;
  NodeId src;
  NodeId dst;
  int64_t capacity;                            // of the first piece
  int64_t cost;                                // of the first piece
  std::span<const ArcSegment> extra_segments;  // valid during the callback
};

// One out-arc a node should have (FlowNetwork::SetOutArcs).
struct DesiredArc {
  NodeId dst = kNoNode;
  int64_t capacity = 0;
  int64_t cost = 0;
  std::vector<ArcSegment> extra_segments;
};

class FlowNetwork {
 public:
  FlowNetwork() = default;
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;
  FlowNetwork(FlowNetwork&&) = default;
  FlowNetwork& operator=(FlowNetwork&&) = default;

  // Records changes from now on (graph manager) or not (solver replica).
  void set_record_changes(bool record) { record_changes_ = record; }

  // Adds a node in the lowest free slot. Lowest-first reuse makes ids a
  // function of the set of live nodes, not of the order of removals, so a
  // network restored from storage hands out the same ids as the original.
  NodeId AddNode(const NodeData& data);
  // Adds a node with a given id. FailedPrecondition if the id is live,
  // InvalidArgument if it is >= kMaxNodeId or the kind is invalid.
  absl::Status AddNodeWithId(NodeId id, const NodeData& data);
  // Changes supply and running_on. FailedPrecondition for a dead node.
  absl::Status UpdateNode(NodeId id, int64_t supply, uint64_t running_on);
  // Removes the node and every arc at it (recorded as arc removals followed
  // by the node removal). FailedPrecondition if dead.
  absl::Status RemoveNode(NodeId id);
  // Adds the arc or sets its capacity and cost, and optionally further
  // convex pieces. FailedPrecondition if an end is dead; InvalidArgument
  // for a self-loop, negative capacity, values beyond solver::kMaxArcCost /
  // kMaxArcCapacity, more than kMaxArcSegments pieces, or a piece cheaper
  // than the one before it.
  absl::Status SetArc(NodeId src, NodeId dst, int64_t capacity, int64_t cost,
                      std::span<const ArcSegment> extra_segments = {});
  // SetArc that also returns the arc's slot and gives, in `before`, the
  // pieces the arc had (empty for a new arc): one lookup of the arc index
  // where FindArc, SetArc and FindArc again take three.
  absl::StatusOr<ArcSlot> SetArcInSlot(
      NodeId src, NodeId dst, int64_t capacity, int64_t cost,
      std::span<const ArcSegment> extra_segments,
      absl::InlinedVector<ArcSegment, 2>& before);
  // FailedPrecondition if there is no such arc.
  absl::Status RemoveArc(NodeId src, NodeId dst);
  // Makes `src`'s out-arcs exactly `desired`: the same state and recorded
  // changes as RemoveArc of every other out-arc (in out-list order) and
  // then SetArc of each desired arc in turn, with the checks of both, all
  // made before anything changes. Arcs `src` already has are matched on
  // its out-list, so only new arcs cost a lookup of the arc index: a task
  // re-synced after it started pays for its one new arc, not for six.
  // Matching is O(out-arcs x desired) up to 16 desired arcs, O(out-arcs +
  // desired) beyond. FailedPrecondition if `src` is dead.
  absl::Status SetOutArcs(NodeId src, std::span<const DesiredArc> desired);
  // Applies one change with the checks above.
  absl::Status Apply(const GraphChange& change);

  // Returns and clears the recorded changes.
  std::vector<GraphChange> TakeChanges();
  // While set, every `chunk` recorded changes are handed to `sink` as soon
  // as they are recorded (in order); TakeChanges returns what is left. So
  // a replica can apply a large delta while it is still being recorded.
  // An empty sink stops it.
  void set_change_sink(size_t chunk,
                       std::function<void(std::vector<GraphChange>)> sink) {
    sink_chunk_ = std::max<size_t>(1, chunk);
    sink_ = std::move(sink);
  }
  [[nodiscard]] bool has_changes() const { return !changes_.empty(); }
  // The whole network as changes that rebuild it from empty: nodes in id
  // order, then arcs in slot order.
  [[nodiscard]] std::vector<GraphChange> SnapshotChanges() const;

  [[nodiscard]] bool IsLive(NodeId id) const {
    return id < nodes_.size() && nodes_[id].data.kind != NodeKind::kUnused;
  }
  // REQUIRES: IsLive(id).
  [[nodiscard]] const NodeData& node(NodeId id) const {
    return nodes_[id].data;
  }
  [[nodiscard]] std::optional<ArcView> FindArc(NodeId src, NodeId dst) const;
  // The node's out-arc if it has exactly one (nullopt otherwise). O(1).
  [[nodiscard]] std::optional<ArcView> SoleOutArc(NodeId id) const;
  // Whether arc slot `slot` holds a live arc and, if so, its ends: a
  // sequential walk over slots, for passes that visit every arc with flow.
  [[nodiscard]] bool ArcEnds(ArcSlot slot, NodeId& src, NodeId& dst) const {
    if (slot >= arc_ends_.size() || arc_ends_[slot].src == kNoNode) {
      return false;
    }
    src = arc_ends_[slot].src;
    dst = arc_ends_[slot].dst;
    return true;
  }
  // node(id).kind, from a byte per node slot (kUnused for a dead slot):
  // passes over every arc with flow ask it of 150,000 random nodes.
  [[nodiscard]] NodeKind kind(NodeId id) const {
    return id < node_kinds_.size() ? node_kinds_[id] : NodeKind::kUnused;
  }

  void ForEachOutArc(NodeId id,
                     const std::function<void(const ArcView&)>& fn) const;
  void ForEachInArc(NodeId id,
                    const std::function<void(const ArcView&)>& fn) const;
  void ForEachNode(
      const std::function<void(NodeId, const NodeData&)>& fn) const;

  [[nodiscard]] size_t node_slot_count() const { return nodes_.size(); }
  [[nodiscard]] size_t arc_slot_count() const { return arcs_.size(); }
  [[nodiscard]] size_t node_count() const { return live_nodes_; }
  [[nodiscard]] size_t arc_count() const { return arc_index_.size(); }
  [[nodiscard]] int64_t total_supply() const { return total_supply_; }

  // Writes the network as a dense problem: one solver node per node slot
  // (dead slots have zero supply and no arcs) and one solver arc per piece
  // of each live arc, in slot order; `arc_slots[i]` is the slot of problem
  // arc i (several problem arcs share the slot of a convex arc).
  void ExportProblem(solver::McmfProblem& problem,
                     std::vector<ArcSlot>& arc_slots) const;

 private:
  static constexpr uint32_t kNil = std::numeric_limits<uint32_t>::max();
  struct NodeSlot {
    NodeData data;
    uint32_t first_out = kNil;
    uint32_t first_in = kNil;
  };
  // 32 bytes: the ends live in arc_ends_ (whose src says whether the slot
  // is live), the cost fits 32 bits (|cost| <= solver::kMaxArcCost), and
  // the rare further pieces of a convex arc sit in extras_.
  struct ArcEntry {
    int64_t capacity = 0;
    int32_t cost = 0;
    uint32_t extra = kNil;  // index into extras_, kNil for one piece
    uint32_t prev_out = kNil, next_out = kNil;
    uint32_t prev_in = kNil, next_in = kNil;
  };
  static_assert(solver::kMaxArcCost <= std::numeric_limits<int32_t>::max());
  static uint64_t ArcKey(NodeId src, NodeId dst) {
    return (uint64_t{src} << 32) | dst;
  }
  void Record(const GraphChange& change) {
    if (!record_changes_) return;
    changes_.push_back(change);
    MaybeSink();
  }
  void MaybeSink() {
    if (sink_ && changes_.size() >= sink_chunk_) {
      sink_(std::exchange(changes_, {}));
      changes_.reserve(sink_chunk_);  // the next chunk without regrowth
    }
  }
  void RecordSetArc(NodeId src, NodeId dst, int64_t capacity, int64_t cost,
                    std::span<const ArcSegment> extra_segments) {
    if (!record_changes_) return;  // a replica copies no segments
    changes_.push_back(
        {.type = GraphChange::Type::kSetArc,
         .src = src,
         .dst = dst,
         .capacity = capacity,
         .cost = cost,
         .extra_segments = {extra_segments.begin(), extra_segments.end()}});
    MaybeSink();
  }
  void PlaceNode(NodeId id, const NodeData& data);
  // Gives the live arc in `slot` these pieces; records it if they differ.
  void UpdateArc(ArcSlot slot, int64_t capacity, int64_t cost,
                 std::span<const ArcSegment> extra_segments);
  // SetArc's checks: FailedPrecondition for an unknown node,
  // InvalidArgument for a self-loop or a value out of range.
  [[nodiscard]] absl::Status CheckArc(
      NodeId src, NodeId dst, int64_t capacity, int64_t cost,
      std::span<const ArcSegment> extra_segments) const;
  // Puts a new arc in the lowest free slot (or a new one) at the head of
  // its ends' lists; returns the slot. REQUIRES: no arc src->dst.
  ArcSlot LinkNewArc(NodeId src, NodeId dst, int64_t capacity, int64_t cost,
                     std::span<const ArcSegment> extra_segments);
  void UnlinkArc(ArcSlot slot);
  // SetArc and SetArcInSlot: `before`, if given, receives the old pieces.
  absl::StatusOr<ArcSlot> SetArcAt(NodeId src, NodeId dst, int64_t capacity,
                                   int64_t cost,
                                   std::span<const ArcSegment> extra_segments,
                                   absl::InlinedVector<ArcSegment, 2>* before);
  // The further pieces of the arc in `slot` (empty for one piece).
  [[nodiscard]] std::span<const ArcSegment> Extra(ArcSlot slot) const {
    const uint32_t extra = arcs_[slot].extra;
    if (extra == kNil) return {};
    return extras_[extra];
  }
  // Gives the arc in `slot` these further pieces, reusing or freeing its
  // entry in extras_.
  void SetExtra(ArcSlot slot, std::span<const ArcSegment> pieces);
  [[nodiscard]] ArcView View(ArcSlot slot) const {
    const ArcEntry& arc = arcs_[slot];
    return ArcView{
        slot,     arc_ends_[slot].src, arc_ends_[slot].dst, arc.capacity,
        arc.cost, Extra(slot)};
  }

  std::vector<NodeSlot> nodes_;
  // Min-heaps of free slots, with lazy deletion: an entry may be stale
  // (slot reused through AddNodeWithId) and is skipped when popped.
  std::vector<NodeId> free_nodes_;
  std::vector<ArcEntry> arcs_;
  // Each slot's ends (src kNoNode: dead) and a copy of each node's kind,
  // 8 bytes an arc and 1 a node apart from the 32 and 48 of the entries:
  // a walk over the arcs with flow streams them instead of touching a
  // cache line per arc.
  struct Ends {
    NodeId src = kNoNode;
    NodeId dst = kNoNode;
  };
  std::vector<Ends> arc_ends_;
  // Further pieces of convex arcs, and the free entries among them.
  std::vector<std::vector<ArcSegment>> extras_;
  std::vector<uint32_t> free_extras_;
  std::vector<NodeKind> node_kinds_;
  std::vector<ArcSlot> free_arcs_;
  absl::flat_hash_map<uint64_t, ArcSlot> arc_index_;
  size_t live_nodes_ = 0;
  int64_t total_supply_ = 0;
  bool record_changes_ = false;
  std::vector<GraphChange> changes_;
  size_t sink_chunk_ = 1;
  std::function<void(std::vector<GraphChange>)> sink_;
};

}  // namespace flowsched::flow
