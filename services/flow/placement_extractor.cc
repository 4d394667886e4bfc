#include "services/flow/placement_extractor.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "absl/strings/str_cat.h"

namespace flowsched::flow {
namespace {

// Calls f(slot, units) for every slot with flow, ascending: from the bit
// set when there is one, else by reading every slot.
template <typename F>
void ForEachSlotWithFlow(const std::vector<int64_t>& flow_by_slot,
                         ArcSlot slots, const std::vector<uint64_t>* bits,
                         F&& f) {
  if (bits == nullptr) {
    for (ArcSlot slot = 0; slot < slots; ++slot) {
      if (flow_by_slot[slot] > 0) f(slot, flow_by_slot[slot]);
    }
    return;
  }
  const size_t words =
      std::min<size_t>(bits->size(), (size_t{slots} + 63) / 64);
  for (size_t w = 0; w < words; ++w) {
    for (uint64_t word = (*bits)[w]; word != 0; word &= word - 1) {
      const auto slot = static_cast<ArcSlot>(
          w * 64 + static_cast<size_t>(std::countr_zero(word)));
      if (slot < slots && flow_by_slot[slot] > 0) f(slot, flow_by_slot[slot]);
    }
  }
}

}  // namespace

void MoveMachineUnits(MachineList& from, MachineList& to, int64_t units) {
  int64_t moved = 0;
  while (moved < units && !from.empty()) {
    auto& [machine, count] = from.back();
    const int64_t take = std::min(count, units - moved);
    to.emplace_back(machine, take);
    count -= take;
    moved += take;
    if (count == 0) from.pop_back();
  }
}

// Only arcs with flow matter, a small part of a scheduling network's arcs:
// two sequential passes over them (count per head, then place) collect
// them, so the walk never follows the network's arc lists and nothing grows
// while it fills. REQUIRES: flow_by_slot covers every slot.
void PlacementExtractor::CollectFlowInArcs(
    const FlowNetwork& network, const std::vector<int64_t>& flow_by_slot,
    const std::vector<uint64_t>* slots_with_flow) {
  const size_t n = network.node_slot_count();
  const auto slots = static_cast<ArcSlot>(network.arc_slot_count());
  std::vector<uint32_t>& first_in = walk_.first_in;
  first_in.assign(n + 1, 0);
  NodeId src = kNoNode, dst = kNoNode;
  ForEachSlotWithFlow(flow_by_slot, slots, slots_with_flow,
                      [&](ArcSlot slot, int64_t) {
                        if (network.ArcEnds(slot, src, dst)) {
                          ++first_in[dst + 1];
                        }
                      });
  for (size_t v = 0; v < n; ++v) first_in[v + 1] += first_in[v];
  walk_.in_arcs.resize(first_in[n]);
  next_.assign(first_in.begin(), first_in.end() - 1);
  ForEachSlotWithFlow(flow_by_slot, slots, slots_with_flow,
                      [&](ArcSlot slot, int64_t units) {
                        if (network.ArcEnds(slot, src, dst)) {
                          walk_.in_arcs[next_[dst]++] = {src, units};
                        }
                      });
}

// A node is ready once every outgoing flow arc that leads to another node
// than the sink has handed its machines back; machine nodes start with
// their own inflow.
void PlacementExtractor::StartFlowWalk(const FlowNetwork& network) {
  const size_t n = network.node_slot_count();
  const std::vector<uint32_t>& first_in = walk_.first_in;
  walk_.pending.assign(n, 0);
  if (walk_.lists.size() < n) walk_.lists.resize(n);
  for (NodeId v : listed_) {
    if (v < walk_.lists.size()) walk_.lists[v].clear();
  }
  listed_.clear();
  walk_.ready.clear();
  for (NodeId v = 0; v < n; ++v) {
    if (first_in[v] == first_in[v + 1] || network.kind(v) == NodeKind::kSink) {
      continue;
    }
    for (uint32_t i = first_in[v]; i < first_in[v + 1]; ++i) {
      ++walk_.pending[walk_.in_arcs[i].src];
    }
  }
  for (NodeId v = 0; v < n; ++v) {
    if (first_in[v] == first_in[v + 1]) continue;
    const NodeKind k = network.kind(v);
    if (k == NodeKind::kMachine) {
      walk_.lists[v].emplace_back(v, walk_.Inflow(v));
      listed_.push_back(v);
    }
    if (k != NodeKind::kSink && k != NodeKind::kTask && walk_.pending[v] == 0) {
      walk_.ready.push_back(v);
    }
  }
}

void PlacementExtractor::WalkFlowToTasks(const FlowNetwork& network) {
  const size_t n = network.node_slot_count();
  walk_.task_machine.assign(n, kNoNode);
  walk_.task_units.assign(n, 0);
  walk_.Walk([&](uint32_t v) { return network.kind(v) == NodeKind::kTask; },
             [&](uint32_t v) { listed_.push_back(v); });
}

// One placement per task node, in node id order; Internal for a task whose
// flow was not traced or that reached more than one unit. Walks the kinds
// (one byte per node) and reads a node's data only for tasks.
absl::StatusOr<std::vector<TaskPlacement>>
PlacementExtractor::CollectTaskPlacements(const FlowNetwork& network) const {
  std::vector<TaskPlacement> placements;
  placements.reserve(network.node_count());
  const auto n = static_cast<NodeId>(network.node_slot_count());
  for (NodeId id = 0; id < n; ++id) {
    if (network.kind(id) != NodeKind::kTask) continue;
    if (walk_.pending[id] != 0) {
      return absl::InternalError(
          absl::StrCat("flow from task node ", id, " cannot be traced"));
    }
    const int64_t units = walk_.task_units[id];
    if (units > 1) {
      return absl::InternalError(
          absl::StrCat("task node ", id, " reaches ", units, " machine units"));
    }
    const NodeData& data = network.node(id);
    TaskPlacement placement{id, data.entity_id, 0, data.running_on};
    if (units == 1) {
      placement.machine_id = network.node(walk_.task_machine[id]).entity_id;
    }
    placements.push_back(placement);
  }
  return placements;
}

absl::StatusOr<std::vector<TaskPlacement>> PlacementExtractor::Extract(
    const FlowNetwork& network, const std::vector<int64_t>& flow_by_slot,
    const std::vector<uint64_t>* slots_with_flow) {
  if (flow_by_slot.size() < network.arc_slot_count()) {
    return absl::InternalError(absl::StrCat("flow covers ", flow_by_slot.size(),
                                            " arc slots, network has ",
                                            network.arc_slot_count()));
  }
  CollectFlowInArcs(network, flow_by_slot, slots_with_flow);
  StartFlowWalk(network);
  WalkFlowToTasks(network);
  return CollectTaskPlacements(network);
}

absl::StatusOr<std::vector<TaskPlacement>> ExtractPlacements(
    const FlowNetwork& network, const std::vector<int64_t>& flow_by_slot,
    const std::vector<uint64_t>* slots_with_flow) {
  return PlacementExtractor().Extract(network, flow_by_slot, slots_with_flow);
}

}  // namespace flowsched::flow
