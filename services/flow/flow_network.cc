#include "services/flow/flow_network.h"

#include <algorithm>
#include <array>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"

namespace flowsched::flow {
namespace {

// Pops the smallest id from a min-heap kept with std::push_heap(greater).
template <typename T>
T PopMin(std::vector<T>& heap) {
  std::pop_heap(heap.begin(), heap.end(), std::greater<T>());
  T value = heap.back();
  heap.pop_back();
  return value;
}
template <typename T>
void PushMin(std::vector<T>& heap, T value) {
  heap.push_back(value);
  std::push_heap(heap.begin(), heap.end(), std::greater<T>());
}

}  // namespace

void FlowNetwork::PlaceNode(NodeId id, const NodeData& data) {
  NodeSlot& slot = nodes_[id];
  slot.data = data;
  if (node_kinds_.size() < nodes_.size()) {
    node_kinds_.resize(nodes_.size(), NodeKind::kUnused);
  }
  node_kinds_[id] = data.kind;
  slot.first_out = kNil;
  slot.first_in = kNil;
  ++live_nodes_;
  total_supply_ += data.supply;
}

NodeId FlowNetwork::AddNode(const NodeData& data) {
  NodeId id = kNoNode;
  while (!free_nodes_.empty()) {
    NodeId candidate = PopMin(free_nodes_);
    if (!IsLive(candidate)) {
      id = candidate;
      break;
    }
  }
  if (id == kNoNode) {
    id = static_cast<NodeId>(nodes_.size());
    nodes_.emplace_back();
  }
  PlaceNode(id, data);
  Record({.type = GraphChange::Type::kAddNode, .node = id, .data = data});
  return id;
}

absl::Status FlowNetwork::AddNodeWithId(NodeId id, const NodeData& data) {
  if (id >= kMaxNodeId) {
    return absl::InvalidArgumentError(
        absl::StrCat("node id ", id, " exceeds the limit ", kMaxNodeId));
  }
  if (data.kind == NodeKind::kUnused ||
      static_cast<uint8_t>(data.kind) > kMaxNodeKind) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node ", id, " has invalid kind ", static_cast<int>(data.kind)));
  }
  if (IsLive(id)) {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", id, " already exists"));
  }
  while (nodes_.size() <= id) {
    const NodeId fresh = static_cast<NodeId>(nodes_.size());
    nodes_.emplace_back();
    if (fresh != id) PushMin(free_nodes_, fresh);
  }
  PlaceNode(id, data);
  Record({.type = GraphChange::Type::kAddNode, .node = id, .data = data});
  return absl::OkStatus();
}

absl::Status FlowNetwork::UpdateNode(NodeId id, int64_t supply,
                                     uint64_t running_on) {
  if (!IsLive(id)) {
    return absl::FailedPreconditionError(
        absl::StrCat("update of unknown node ", id));
  }
  NodeData& data = nodes_[id].data;
  if (data.supply == supply && data.running_on == running_on) {
    return absl::OkStatus();
  }
  total_supply_ += supply - data.supply;
  data.supply = supply;
  data.running_on = running_on;
  Record({.type = GraphChange::Type::kUpdateNode, .node = id, .data = data});
  return absl::OkStatus();
}

void FlowNetwork::SetExtra(ArcSlot slot, std::span<const ArcSegment> pieces) {
  uint32_t& extra = arcs_[slot].extra;
  if (pieces.empty()) {
    if (extra != kNil) {
      extras_[extra] = {};
      free_extras_.push_back(extra);
      extra = kNil;
    }
    return;
  }
  if (extra == kNil) {
    if (free_extras_.empty()) {
      extra = static_cast<uint32_t>(extras_.size());
      extras_.emplace_back();
    } else {
      extra = free_extras_.back();
      free_extras_.pop_back();
    }
  }
  extras_[extra].assign(pieces.begin(), pieces.end());
}

void FlowNetwork::UnlinkArc(ArcSlot slot) {
  ArcEntry& arc = arcs_[slot];
  const Ends ends = arc_ends_[slot];
  if (arc.prev_out != kNil) {
    arcs_[arc.prev_out].next_out = arc.next_out;
  } else {
    nodes_[ends.src].first_out = arc.next_out;
  }
  if (arc.next_out != kNil) arcs_[arc.next_out].prev_out = arc.prev_out;
  if (arc.prev_in != kNil) {
    arcs_[arc.prev_in].next_in = arc.next_in;
  } else {
    nodes_[ends.dst].first_in = arc.next_in;
  }
  if (arc.next_in != kNil) arcs_[arc.next_in].prev_in = arc.prev_in;
  arc_index_.erase(ArcKey(ends.src, ends.dst));
  SetExtra(slot, {});
  arc_ends_[slot] = Ends{};
  PushMin(free_arcs_, slot);
}

absl::Status FlowNetwork::RemoveNode(NodeId id) {
  if (!IsLive(id)) {
    return absl::FailedPreconditionError(
        absl::StrCat("removal of unknown node ", id));
  }
  // Each arc removal is recorded on its own so that stores keyed by arc
  // (RocksDB) and replicas see every arc go, not only the node.
  for (uint32_t* head : {&nodes_[id].first_out, &nodes_[id].first_in}) {
    while (*head != kNil) {
      const Ends ends = arc_ends_[*head];
      Record({.type = GraphChange::Type::kRemoveArc,
              .src = ends.src,
              .dst = ends.dst});
      UnlinkArc(*head);
    }
  }
  total_supply_ -= nodes_[id].data.supply;
  nodes_[id].data = NodeData{};
  node_kinds_[id] = NodeKind::kUnused;
  --live_nodes_;
  PushMin(free_nodes_, id);
  Record({.type = GraphChange::Type::kRemoveNode, .node = id});
  return absl::OkStatus();
}

absl::Status FlowNetwork::CheckArc(
    NodeId src, NodeId dst, int64_t capacity, int64_t cost,
    std::span<const ArcSegment> extra_segments) const {
  if (!IsLive(src) || !IsLive(dst)) {
    return absl::FailedPreconditionError(
        absl::StrCat("arc ", src, "->", dst, " names an unknown node"));
  }
  if (src == dst) {
    return absl::InvalidArgumentError(
        absl::StrCat("arc ", src, "->", dst, " is a self-loop"));
  }
  if (capacity < 0 || capacity > solver::kMaxArcCapacity ||
      cost < -solver::kMaxArcCost || cost > solver::kMaxArcCost) {
    return absl::InvalidArgumentError(
        absl::StrCat("arc ", src, "->", dst, " capacity ", capacity, " cost ",
                     cost, " is out of range"));
  }
  if (extra_segments.size() > kMaxArcSegments) {
    return absl::InvalidArgumentError(
        absl::StrCat("arc ", src, "->", dst, " has ", extra_segments.size(),
                     " extra pieces; the limit is ", kMaxArcSegments));
  }
  int64_t total_capacity = capacity;
  int64_t previous_cost = cost;
  for (const ArcSegment& piece : extra_segments) {
    if (piece.capacity < 0 || piece.cost > solver::kMaxArcCost ||
        piece.cost < previous_cost) {
      return absl::InvalidArgumentError(
          absl::StrCat("arc ", src, "->", dst, " piece (capacity ",
                       piece.capacity, ", cost ", piece.cost,
                       ") is out of range or cheaper than the "
                       "piece before it"));
    }
    previous_cost = piece.cost;
    total_capacity += piece.capacity;
    if (total_capacity > solver::kMaxArcCapacity) {
      return absl::InvalidArgumentError(absl::StrCat("arc ", src, "->", dst,
                                                     " capacity exceeds ",
                                                     solver::kMaxArcCapacity));
    }
  }
  return absl::OkStatus();
}

ArcSlot FlowNetwork::LinkNewArc(NodeId src, NodeId dst, int64_t capacity,
                                int64_t cost,
                                std::span<const ArcSegment> extra_segments) {
  ArcSlot slot = kNil;
  while (!free_arcs_.empty()) {
    ArcSlot candidate = PopMin(free_arcs_);
    if (arc_ends_[candidate].src == kNoNode) {
      slot = candidate;
      break;
    }
  }
  if (slot == kNil) {
    slot = static_cast<ArcSlot>(arcs_.size());
    arcs_.emplace_back();
    arc_ends_.emplace_back();
  }
  arc_ends_[slot] = Ends{src, dst};
  ArcEntry& arc = arcs_[slot];
  arc = ArcEntry{.capacity = capacity,
                 .cost = static_cast<int32_t>(cost),  // CheckArc's range
                 .extra = kNil,
                 .prev_out = kNil,
                 .next_out = nodes_[src].first_out,
                 .prev_in = kNil,
                 .next_in = nodes_[dst].first_in};
  SetExtra(slot, extra_segments);
  if (arc.next_out != kNil) arcs_[arc.next_out].prev_out = slot;
  if (arc.next_in != kNil) arcs_[arc.next_in].prev_in = slot;
  nodes_[src].first_out = slot;
  nodes_[dst].first_in = slot;
  return slot;
}

absl::StatusOr<ArcSlot> FlowNetwork::SetArcAt(
    NodeId src, NodeId dst, int64_t capacity, int64_t cost,
    std::span<const ArcSegment> extra_segments,
    absl::InlinedVector<ArcSegment, 2>* before) {
  FLOWSCHED_RETURN_IF_ERROR(CheckArc(src, dst, capacity, cost, extra_segments));
  auto [it, inserted] = arc_index_.try_emplace(ArcKey(src, dst), kNil);
  if (!inserted) {
    const ArcSlot slot = it->second;
    if (before != nullptr) {
      before->push_back({arcs_[slot].capacity, arcs_[slot].cost});
      const std::span<const ArcSegment> extra = Extra(slot);
      before->insert(before->end(), extra.begin(), extra.end());
    }
    UpdateArc(slot, capacity, cost, extra_segments);
    return slot;
  }
  const ArcSlot slot = LinkNewArc(src, dst, capacity, cost, extra_segments);
  it->second = slot;
  RecordSetArc(src, dst, capacity, cost, extra_segments);
  return slot;
}

absl::Status FlowNetwork::SetArc(NodeId src, NodeId dst, int64_t capacity,
                                 int64_t cost,
                                 std::span<const ArcSegment> extra_segments) {
  return SetArcAt(src, dst, capacity, cost, extra_segments, nullptr).status();
}

absl::StatusOr<ArcSlot> FlowNetwork::SetArcInSlot(
    NodeId src, NodeId dst, int64_t capacity, int64_t cost,
    std::span<const ArcSegment> extra_segments,
    absl::InlinedVector<ArcSegment, 2>& before) {
  before.clear();
  return SetArcAt(src, dst, capacity, cost, extra_segments, &before);
}

void FlowNetwork::UpdateArc(ArcSlot slot, int64_t capacity, int64_t cost,
                            std::span<const ArcSegment> extra_segments) {
  ArcEntry& arc = arcs_[slot];
  const std::span<const ArcSegment> extra = Extra(slot);
  if (arc.capacity == capacity && arc.cost == cost &&
      std::equal(extra.begin(), extra.end(), extra_segments.begin(),
                 extra_segments.end())) {
    return;
  }
  arc.capacity = capacity;
  arc.cost = static_cast<int32_t>(cost);  // CheckArc's range
  SetExtra(slot, extra_segments);
  RecordSetArc(arc_ends_[slot].src, arc_ends_[slot].dst, capacity, cost,
               extra_segments);
}

absl::Status FlowNetwork::SetOutArcs(NodeId src,
                                     std::span<const DesiredArc> desired) {
  if (!IsLive(src)) {
    return absl::FailedPreconditionError(
        absl::StrCat("out-arcs of unknown node ", src));
  }
  for (const DesiredArc& arc : desired) {
    FLOWSCHED_RETURN_IF_ERROR(
        CheckArc(src, arc.dst, arc.capacity, arc.cost, arc.extra_segments));
  }
  // The slot each desired arc already has (kNil: new), and the arcs to go.
  constexpr size_t kInline = 16;
  std::array<ArcSlot, kInline> inline_slots;
  std::vector<ArcSlot> heap_slots;
  std::span<ArcSlot> slots(inline_slots.data(), desired.size());
  if (desired.size() > kInline) {
    heap_slots.resize(desired.size());
    slots = heap_slots;
  }
  std::fill(slots.begin(), slots.end(), kNil);
  // Each out-arc matches the first desired arc to its head: by a scan of
  // a short list, through an index of a long one (a request shape's arcs
  // to thousands of machines would make the scan quadratic).
  const bool indexed = desired.size() > kInline;
  absl::flat_hash_map<NodeId, size_t> first_wanted;
  if (indexed) {
    first_wanted.reserve(desired.size());
    for (size_t i = 0; i < desired.size(); ++i) {
      first_wanted.try_emplace(desired[i].dst, i);
    }
  }
  const auto find_wanted = [&](NodeId dst) -> size_t {
    if (indexed) {
      auto it = first_wanted.find(dst);
      return it == first_wanted.end() ? desired.size() : it->second;
    }
    return static_cast<size_t>(
        std::find_if(desired.begin(), desired.end(),
                     [&](const DesiredArc& d) { return d.dst == dst; }) -
        desired.begin());
  };
  std::vector<ArcSlot> stale;
  for (ArcSlot slot = nodes_[src].first_out; slot != kNil;
       slot = arcs_[slot].next_out) {
    const size_t wanted = find_wanted(arc_ends_[slot].dst);
    if (wanted == desired.size()) {
      stale.push_back(slot);
    } else {
      slots[wanted] = slot;
    }
  }
  for (ArcSlot slot : stale) {
    const NodeId dst = arc_ends_[slot].dst;
    UnlinkArc(slot);
    Record({.type = GraphChange::Type::kRemoveArc, .src = src, .dst = dst});
  }
  for (size_t i = 0; i < desired.size(); ++i) {
    const DesiredArc& arc = desired[i];
    if (slots[i] != kNil) {
      UpdateArc(slots[i], arc.capacity, arc.cost, arc.extra_segments);
    } else {
      FLOWSCHED_RETURN_IF_ERROR(
          SetArc(src, arc.dst, arc.capacity, arc.cost, arc.extra_segments));
    }
  }
  return absl::OkStatus();
}

absl::Status FlowNetwork::RemoveArc(NodeId src, NodeId dst) {
  auto it = arc_index_.find(ArcKey(src, dst));
  if (it == arc_index_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("removal of unknown arc ", src, "->", dst));
  }
  UnlinkArc(it->second);
  Record({.type = GraphChange::Type::kRemoveArc, .src = src, .dst = dst});
  return absl::OkStatus();
}

absl::Status FlowNetwork::Apply(const GraphChange& change) {
  switch (change.type) {
    case GraphChange::Type::kAddNode:
      return AddNodeWithId(change.node, change.data);
    case GraphChange::Type::kRemoveNode:
      return RemoveNode(change.node);
    case GraphChange::Type::kUpdateNode:
      return UpdateNode(change.node, change.data.supply,
                        change.data.running_on);
    case GraphChange::Type::kSetArc:
      return SetArc(change.src, change.dst, change.capacity, change.cost,
                    change.extra_segments);
    case GraphChange::Type::kRemoveArc:
      return RemoveArc(change.src, change.dst);
  }
  return absl::InvalidArgumentError("unknown graph change type");
}

std::vector<GraphChange> FlowNetwork::TakeChanges() {
  return std::exchange(changes_, {});
}

std::vector<GraphChange> FlowNetwork::SnapshotChanges() const {
  std::vector<GraphChange> out;
  out.reserve(live_nodes_ + arc_index_.size());
  for (NodeId id = 0; id < nodes_.size(); ++id) {
    if (IsLive(id)) {
      out.push_back({.type = GraphChange::Type::kAddNode,
                     .node = id,
                     .data = nodes_[id].data});
    }
  }
  for (ArcSlot slot = 0; slot < arcs_.size(); ++slot) {
    if (arc_ends_[slot].src == kNoNode) continue;
    const std::span<const ArcSegment> extra = Extra(slot);
    out.push_back({.type = GraphChange::Type::kSetArc,
                   .src = arc_ends_[slot].src,
                   .dst = arc_ends_[slot].dst,
                   .capacity = arcs_[slot].capacity,
                   .cost = arcs_[slot].cost,
                   .extra_segments = {extra.begin(), extra.end()}});
  }
  return out;
}

std::optional<ArcView> FlowNetwork::FindArc(NodeId src, NodeId dst) const {
  auto it = arc_index_.find(ArcKey(src, dst));
  if (it == arc_index_.end()) return std::nullopt;
  return View(it->second);
}

std::optional<ArcView> FlowNetwork::SoleOutArc(NodeId id) const {
  if (!IsLive(id)) return std::nullopt;
  const uint32_t slot = nodes_[id].first_out;
  if (slot == kNil || arcs_[slot].next_out != kNil) return std::nullopt;
  return View(slot);
}

void FlowNetwork::ForEachOutArc(
    NodeId id, const std::function<void(const ArcView&)>& fn) const {
  if (!IsLive(id)) return;
  for (uint32_t slot = nodes_[id].first_out; slot != kNil;) {
    const uint32_t next = arcs_[slot].next_out;
    fn(View(slot));
    slot = next;
  }
}

void FlowNetwork::ForEachInArc(
    NodeId id, const std::function<void(const ArcView&)>& fn) const {
  if (!IsLive(id)) return;
  for (uint32_t slot = nodes_[id].first_in; slot != kNil;) {
    const uint32_t next = arcs_[slot].next_in;
    fn(View(slot));
    slot = next;
  }
}

void FlowNetwork::ForEachNode(
    const std::function<void(NodeId, const NodeData&)>& fn) const {
  for (NodeId id = 0; id < nodes_.size(); ++id) {
    if (IsLive(id)) fn(id, nodes_[id].data);
  }
}

void FlowNetwork::ExportProblem(solver::McmfProblem& problem,
                                std::vector<ArcSlot>& arc_slots) const {
  problem.node_count = static_cast<uint32_t>(nodes_.size());
  problem.supply.assign(nodes_.size(), 0);
  for (NodeId id = 0; id < nodes_.size(); ++id) {
    if (IsLive(id)) problem.supply[id] = nodes_[id].data.supply;
  }
  problem.arcs.clear();
  problem.arcs.reserve(arc_index_.size());
  arc_slots.clear();
  arc_slots.reserve(arc_index_.size());
  for (ArcSlot slot = 0; slot < arcs_.size(); ++slot) {
    const Ends ends = arc_ends_[slot];
    if (ends.src == kNoNode) continue;
    const ArcEntry& arc = arcs_[slot];
    problem.arcs.push_back({ends.src, ends.dst, arc.capacity, arc.cost});
    arc_slots.push_back(slot);
    for (const ArcSegment& piece : Extra(slot)) {
      problem.arcs.push_back({ends.src, ends.dst, piece.capacity, piece.cost});
      arc_slots.push_back(slot);
    }
  }
}

}  // namespace flowsched::flow
