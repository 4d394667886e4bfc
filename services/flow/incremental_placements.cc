#include "services/flow/incremental_placements.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_cat.h"

namespace flowsched::flow {
namespace {

enum class FlowArc : uint8_t {
  kIgnored,     // hands no machine to an aggregator
  kDirect,      // task -> machine: read per task
  kAggregated,  // into an aggregator, or out of one into a machine
  kOutside,     // a shape the incremental walk does not follow
};

bool IsAggregator(NodeKind kind) {
  return kind == NodeKind::kClusterAggregator || kind == NodeKind::kRack ||
         kind == NodeKind::kEquivalenceClass;
}

// How an arc with flow takes part in the extraction. The unscheduled
// aggregators and the sink only ever hand back nothing, so flow into them
// from a task, and flow from them or from machines into the sink, matter
// to no aggregator.
FlowArc Classify(NodeKind src, NodeKind dst) {
  if (dst == NodeKind::kTask || src == NodeKind::kSink) {
    return FlowArc::kOutside;
  }
  if (src == NodeKind::kMachine || src == NodeKind::kJobUnscheduled) {
    return dst == NodeKind::kSink ? FlowArc::kIgnored : FlowArc::kOutside;
  }
  if (dst == NodeKind::kSink) return FlowArc::kIgnored;
  if (src == NodeKind::kTask) {
    if (dst == NodeKind::kMachine) return FlowArc::kDirect;
    if (dst == NodeKind::kJobUnscheduled) return FlowArc::kIgnored;
    return IsAggregator(dst) ? FlowArc::kAggregated : FlowArc::kOutside;
  }
  if (IsAggregator(src) && (dst == NodeKind::kMachine || IsAggregator(dst))) {
    return FlowArc::kAggregated;
  }
  return FlowArc::kOutside;
}

void SetBit(std::vector<uint64_t>& bits, size_t i, bool on) {
  const uint64_t bit = uint64_t{1} << (i % 64);
  if (on) {
    bits[i / 64] |= bit;
  } else {
    bits[i / 64] &= ~bit;
  }
}

}  // namespace

absl::Status IncrementalPlacements::Update(
    const FlowNetwork& network, const std::vector<int64_t>& flow_by_slot,
    const std::vector<uint64_t>& slots_with_flow, FlowChangeLog& log) {
  if (flow_by_slot.size() < network.arc_slot_count()) {
    need_full_ = true;
    return absl::InternalError(absl::StrCat("flow covers ", flow_by_slot.size(),
                                            " arc slots, network has ",
                                            network.arc_slot_count()));
  }
  const bool full = log.everything || need_full_ || outside_shape_;
  if (full || !MarkLoggedSlots(network, flow_by_slot, log)) {
    log.Clear();
    return Rebuild(network, flow_by_slot, slots_with_flow);
  }
  last_full_ = false;
  Resize(network);
  for (NodeId node : log.nodes) ToEvaluate(node);
  log.Clear();
  for (NodeId task : aggregated_tasks_) ToEvaluate(task);
  bool traced = WalkAggregatedFlow(network, flow_by_slot);
  for (size_t i = 0; traced && i < evaluate_.size(); ++i) {
    traced = Evaluate(network, flow_by_slot, evaluate_[i]);
  }
  for (NodeId node : evaluate_) evaluate_flag_[node] = 0;
  evaluate_.clear();
  for (NodeId node : locals_) local_[node] = kNoLocal;
  locals_.clear();
  if (!traced) return Rebuild(network, flow_by_slot, slots_with_flow);
  CollectMoved(network);
  return absl::OkStatus();
}

absl::Status IncrementalPlacements::Rebuild(
    const FlowNetwork& network, const std::vector<int64_t>& flow_by_slot,
    const std::vector<uint64_t>& slots_with_flow) {
  last_full_ = true;
  need_full_ = true;
  absl::StatusOr<std::vector<TaskPlacement>> all =
      full_.Extract(network, flow_by_slot, &slots_with_flow);
  if (!all.ok()) return all.status();
  Resize(network);
  std::fill(placed_on_.begin(), placed_on_.end(), 0);
  std::fill(is_task_.begin(), is_task_.end(), 0);
  std::fill(moved_flag_.begin(), moved_flag_.end(), 0);
  moved_nodes_.clear();
  tasks_ = all->size();
  placed_ = 0;
  for (const TaskPlacement& p : *all) {
    is_task_[p.task_node] = 1;
    placed_on_[p.task_node] = p.machine_id;
    placed_ += p.machine_id != 0;
    SetMoved(p.task_node, p.machine_id != p.running_on);
  }
  const size_t slots = network.arc_slot_count();
  aggregated_.assign((slots + 63) / 64, 0);
  aggregated_tasks_.clear();
  outside_shape_ = false;
  const size_t words = std::min(slots_with_flow.size(), aggregated_.size());
  NodeId src = kNoNode, dst = kNoNode;
  for (size_t w = 0; w < words; ++w) {
    for (uint64_t word = slots_with_flow[w]; word != 0; word &= word - 1) {
      const size_t slot = w * 64 + static_cast<size_t>(std::countr_zero(word));
      if (flow_by_slot[slot] <= 0 ||
          !network.ArcEnds(static_cast<ArcSlot>(slot), src, dst)) {
        continue;
      }
      const FlowArc arc = Classify(network.kind(src), network.kind(dst));
      if (arc == FlowArc::kOutside) outside_shape_ = true;
      if (arc != FlowArc::kAggregated) continue;
      SetBit(aggregated_, slot, true);
      if (network.kind(src) == NodeKind::kTask) {
        aggregated_tasks_.push_back(src);
      }
    }
  }
  CollectMoved(network);
  need_full_ = false;
  return absl::OkStatus();
}

bool IncrementalPlacements::MarkLoggedSlots(
    const FlowNetwork& network, const std::vector<int64_t>& flow_by_slot,
    const FlowChangeLog& log) {
  const size_t slots = network.arc_slot_count();
  aggregated_.resize((slots + 63) / 64, 0);
  NodeId src = kNoNode, dst = kNoNode;
  for (ArcSlot slot : log.slots) {
    if (slot >= slots) continue;
    bool aggregated = false;
    if (flow_by_slot[slot] > 0 && network.ArcEnds(slot, src, dst)) {
      const FlowArc arc = Classify(network.kind(src), network.kind(dst));
      if (arc == FlowArc::kOutside) return false;
      aggregated = arc == FlowArc::kAggregated;
    }
    SetBit(aggregated_, slot, aggregated);
  }
  return true;
}

uint32_t IncrementalPlacements::LocalOf(NodeId node) {
  if (local_[node] == kNoLocal) {
    local_[node] = static_cast<uint32_t>(locals_.size());
    locals_.push_back(node);
  }
  return local_[node];
}

// PlacementExtractor's walk (Kahn's order on the flow DAG, machines handing
// their units back) on the aggregated arcs alone.
bool IncrementalPlacements::WalkAggregatedFlow(
    const FlowNetwork& network, const std::vector<int64_t>& flow_by_slot) {
  walk_arcs_.clear();
  const size_t slots = network.arc_slot_count();
  NodeId src = kNoNode, dst = kNoNode;
  for (size_t w = 0; w < aggregated_.size(); ++w) {
    for (uint64_t word = aggregated_[w]; word != 0; word &= word - 1) {
      const size_t slot = w * 64 + static_cast<size_t>(std::countr_zero(word));
      if (slot >= slots || flow_by_slot[slot] <= 0 ||
          !network.ArcEnds(static_cast<ArcSlot>(slot), src, dst)) {
        return false;  // a stale bit: the log missed a change
      }
      const uint32_t head = LocalOf(dst);
      walk_arcs_.push_back(
          {head, FlowWalk::InArc{LocalOf(src), flow_by_slot[slot]}});
    }
  }
  const size_t n = locals_.size();
  std::vector<uint32_t>& first_in = walk_.first_in;
  first_in.assign(n + 1, 0);
  walk_.pending.assign(n, 0);
  for (const auto& [head, arc] : walk_arcs_) {
    ++first_in[head + 1];
    ++walk_.pending[arc.src];
  }
  for (size_t v = 0; v < n; ++v) first_in[v + 1] += first_in[v];
  walk_.in_arcs.resize(walk_arcs_.size());
  cursor_.assign(first_in.begin(), first_in.end() - 1);
  for (const auto& [head, arc] : walk_arcs_) {
    walk_.in_arcs[cursor_[head]++] = arc;
  }

  walk_.task_machine.assign(n, kNoNode);
  walk_.task_units.assign(n, 0);
  if (walk_.lists.size() < n) walk_.lists.resize(n);
  walk_.ready.clear();
  for (uint32_t v = 0; v < n; ++v) {
    walk_.lists[v].clear();
    if (first_in[v] == first_in[v + 1]) continue;
    const NodeKind kind = network.kind(locals_[v]);
    if (kind == NodeKind::kMachine) {
      walk_.lists[v].emplace_back(locals_[v], walk_.Inflow(v));
    }
    if (kind != NodeKind::kTask && walk_.pending[v] == 0) {
      walk_.ready.push_back(v);
    }
  }
  std::sort(walk_.ready.begin(), walk_.ready.end(),
            [&](uint32_t a, uint32_t b) { return locals_[a] < locals_[b]; });
  walk_.Walk(
      [&](uint32_t v) { return network.kind(locals_[v]) == NodeKind::kTask; },
      [](uint32_t) {});
  aggregated_tasks_.clear();
  for (uint32_t v = 0; v < n; ++v) {
    if (network.kind(locals_[v]) != NodeKind::kTask) continue;
    if (walk_.pending[v] != 0) return false;
    aggregated_tasks_.push_back(locals_[v]);
    ToEvaluate(locals_[v]);
  }
  return true;
}

void IncrementalPlacements::ToEvaluate(NodeId node) {
  if (node >= evaluate_flag_.size() || evaluate_flag_[node] != 0) return;
  evaluate_flag_[node] = 1;
  evaluate_.push_back(node);
}

bool IncrementalPlacements::Evaluate(const FlowNetwork& network,
                                     const std::vector<int64_t>& flow_by_slot,
                                     NodeId node) {
  if (is_task_[node] != 0) {
    --tasks_;
    placed_ -= placed_on_[node] != 0;
  }
  placed_on_[node] = 0;
  is_task_[node] = network.kind(node) == NodeKind::kTask ? 1 : 0;
  if (is_task_[node] == 0) {
    SetMoved(node, false);
    return true;
  }
  ++tasks_;
  int64_t units = 0;
  NodeId machine = kNoNode;
  network.ForEachOutArc(node, [&](const ArcView& arc) {
    if (flow_by_slot[arc.slot] > 0 &&
        network.kind(arc.dst) == NodeKind::kMachine) {
      units += flow_by_slot[arc.slot];
      machine = arc.dst;
    }
  });
  const uint32_t local = local_[node];
  if (local != kNoLocal && walk_.task_units.size() > local &&
      walk_.task_units[local] > 0) {
    units += walk_.task_units[local];
    machine = walk_.task_machine[local];
  }
  if (units > 1) return false;
  if (units == 1) {
    placed_on_[node] = network.node(machine).entity_id;
    ++placed_;
  }
  SetMoved(node, placed_on_[node] != network.node(node).running_on);
  return true;
}

void IncrementalPlacements::SetMoved(NodeId node, bool moved) {
  if (moved && moved_flag_[node] == 0) moved_nodes_.push_back(node);
  moved_flag_[node] = moved ? 1 : 0;
}

void IncrementalPlacements::CollectMoved(const FlowNetwork& network) {
  std::sort(moved_nodes_.begin(), moved_nodes_.end());
  moved_nodes_.erase(std::unique(moved_nodes_.begin(), moved_nodes_.end()),
                     moved_nodes_.end());
  std::erase_if(moved_nodes_,
                [&](NodeId node) { return moved_flag_[node] == 0; });
  moved_.clear();
  for (NodeId node : moved_nodes_) {
    const NodeData& data = network.node(node);
    moved_.push_back(
        TaskPlacement{node, data.entity_id, placed_on_[node], data.running_on});
  }
}

void IncrementalPlacements::Resize(const FlowNetwork& network) {
  const size_t n = network.node_slot_count();
  if (placed_on_.size() >= n) return;
  placed_on_.resize(n, 0);
  is_task_.resize(n, 0);
  moved_flag_.resize(n, 0);
  evaluate_flag_.resize(n, 0);
  local_.resize(n, kNoLocal);
}

std::vector<TaskPlacement> IncrementalPlacements::All(
    const FlowNetwork& network) const {
  std::vector<TaskPlacement> all;
  all.reserve(tasks_);
  const auto n = static_cast<NodeId>(network.node_slot_count());
  for (NodeId node = 0; node < n; ++node) {
    if (network.kind(node) != NodeKind::kTask) continue;
    const NodeData& data = network.node(node);
    const uint64_t placed = node < placed_on_.size() ? placed_on_[node] : 0;
    all.push_back(TaskPlacement{node, data.entity_id, placed, data.running_on});
  }
  return all;
}

}  // namespace flowsched::flow
