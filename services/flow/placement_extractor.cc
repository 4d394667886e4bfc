#include "services/flow/placement_extractor.h"

#include <algorithm>
#include <bit>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"

namespace flowsched::flow {
namespace {

// Machines a node's outgoing flow reached, as (machine node, units) runs.
using MachineList = std::vector<std::pair<NodeId, int64_t>>;

// Moves `units` from the back of `from` to `to`; returns how many moved.
int64_t MoveUnits(MachineList& from, MachineList& to, int64_t units) {
  int64_t moved = 0;
  while (moved < units && !from.empty()) {
    auto& [machine, count] = from.back();
    const int64_t take = std::min(count, units - moved);
    to.emplace_back(machine, take);
    count -= take;
    moved += take;
    if (count == 0) from.pop_back();
  }
  return moved;
}

// The arcs with flow, grouped by head in a CSR: in_arcs[first_in[v] ..
// first_in[v + 1]) enter node v.
struct FlowInArc {
  NodeId src;
  int64_t units;
};
struct FlowInArcs {
  std::vector<uint32_t> first_in;
  std::vector<FlowInArc> in_arcs;
};

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

// Only arcs with flow matter, a small part of a scheduling network's arcs:
// two sequential passes over them (count per head, then place) collect
// them, so the walk never follows the network's arc lists and nothing grows
// while it fills. REQUIRES: flow_by_slot covers every slot.
FlowInArcs CollectFlowInArcs(const FlowNetwork& network,
                             const std::vector<int64_t>& flow_by_slot,
                             const std::vector<uint64_t>* slots_with_flow) {
  const size_t n = network.node_slot_count();
  const auto slots = static_cast<ArcSlot>(network.arc_slot_count());
  FlowInArcs out;
  out.first_in.assign(n + 1, 0);
  NodeId src = kNoNode, dst = kNoNode;
  ForEachSlotWithFlow(flow_by_slot, slots, slots_with_flow,
                      [&](ArcSlot slot, int64_t) {
                        if (network.ArcEnds(slot, src, dst)) {
                          ++out.first_in[dst + 1];
                        }
                      });
  for (size_t v = 0; v < n; ++v) out.first_in[v + 1] += out.first_in[v];
  out.in_arcs.resize(out.first_in[n]);
  std::vector<uint32_t> next(out.first_in.begin(), out.first_in.end() - 1);
  ForEachSlotWithFlow(flow_by_slot, slots, slots_with_flow,
                      [&](ArcSlot slot, int64_t units) {
                        if (network.ArcEnds(slot, src, dst)) {
                          out.in_arcs[next[dst]++] = FlowInArc{src, units};
                        }
                      });
  return out;
}

// Where the backward walk stands: per node the flow arcs still to hand
// machines back (`pending`), the machines it holds (`lists`), and the
// nodes ready to hand theirs on.
struct FlowWalk {
  std::vector<int64_t> pending;
  std::vector<MachineList> lists;
  std::deque<NodeId> ready;
};

// A node is ready once every outgoing flow arc that leads to another node
// than the sink has handed its machines back (Kahn's order on the flow
// DAG); machine nodes start with their own inflow.
FlowWalk StartFlowWalk(const FlowNetwork& network, const FlowInArcs& flows) {
  const size_t n = network.node_slot_count();
  const std::vector<uint32_t>& first_in = flows.first_in;
  FlowWalk walk{std::vector<int64_t>(n, 0), std::vector<MachineList>(n), {}};
  for (NodeId v = 0; v < n; ++v) {
    if (first_in[v] == first_in[v + 1] || network.kind(v) == NodeKind::kSink) {
      continue;
    }
    for (uint32_t i = first_in[v]; i < first_in[v + 1]; ++i) {
      ++walk.pending[flows.in_arcs[i].src];
    }
  }
  for (NodeId v = 0; v < n; ++v) {
    if (first_in[v] == first_in[v + 1]) continue;
    const NodeKind k = network.kind(v);
    if (k == NodeKind::kMachine) {
      int64_t inflow = 0;
      for (uint32_t i = first_in[v]; i < first_in[v + 1]; ++i) {
        inflow += flows.in_arcs[i].units;
      }
      walk.lists[v].emplace_back(v, inflow);
    }
    if (k != NodeKind::kSink && k != NodeKind::kTask && walk.pending[v] == 0) {
      walk.ready.push_back(v);
    }
  }
  return walk;
}

// The machine and unit count each task node's flow reached. Task nodes are
// most of the network and receive at most one unit, so they get a machine
// and a unit count instead of a list of their own; `scratch` keeps its
// capacity across tasks.
struct TaskUnits {
  std::vector<NodeId> machine;
  std::vector<int64_t> units;
};

TaskUnits WalkFlowToTasks(const FlowNetwork& network, const FlowInArcs& flows,
                          FlowWalk& walk) {
  const size_t n = network.node_slot_count();
  TaskUnits tasks{std::vector<NodeId>(n, kNoNode), std::vector<int64_t>(n, 0)};
  MachineList scratch;
  while (!walk.ready.empty()) {
    const NodeId node = walk.ready.front();
    walk.ready.pop_front();
    for (uint32_t i = flows.first_in[node]; i < flows.first_in[node + 1]; ++i) {
      const auto [src, units] = flows.in_arcs[i];
      const bool to_task = network.kind(src) == NodeKind::kTask;
      if (to_task) {
        scratch.clear();
        MoveUnits(walk.lists[node], scratch, units);
        for (const auto& [machine, count] : scratch) {
          tasks.machine[src] = machine;
          tasks.units[src] += count;
        }
      } else {
        MoveUnits(walk.lists[node], walk.lists[src], units);
      }
      if (--walk.pending[src] == 0 && !to_task) walk.ready.push_back(src);
    }
  }
  return tasks;
}

// One placement per task node, in node id order; Internal for a task whose
// flow was not traced or that reached more than one unit. Walks the kinds
// (one byte per node) and reads a node's data only for tasks.
absl::StatusOr<std::vector<TaskPlacement>> CollectTaskPlacements(
    const FlowNetwork& network, const std::vector<int64_t>& pending,
    const TaskUnits& tasks) {
  std::vector<TaskPlacement> placements;
  placements.reserve(network.node_count());
  const auto n = static_cast<NodeId>(network.node_slot_count());
  for (NodeId id = 0; id < n; ++id) {
    if (network.kind(id) != NodeKind::kTask) continue;
    if (pending[id] != 0) {
      return absl::InternalError(
          absl::StrCat("flow from task node ", id, " cannot be traced"));
    }
    const int64_t units = tasks.units[id];
    if (units > 1) {
      return absl::InternalError(
          absl::StrCat("task node ", id, " reaches ", units, " machine units"));
    }
    const NodeData& data = network.node(id);
    TaskPlacement placement{id, data.entity_id, 0, data.running_on};
    if (units == 1) {
      placement.machine_id = network.node(tasks.machine[id]).entity_id;
    }
    placements.push_back(placement);
  }
  return placements;
}

}  // namespace

absl::StatusOr<std::vector<TaskPlacement>> ExtractPlacements(
    const FlowNetwork& network, const std::vector<int64_t>& flow_by_slot,
    const std::vector<uint64_t>* slots_with_flow) {
  if (flow_by_slot.size() < network.arc_slot_count()) {
    return absl::InternalError(absl::StrCat("flow covers ", flow_by_slot.size(),
                                            " arc slots, network has ",
                                            network.arc_slot_count()));
  }
  const FlowInArcs flows =
      CollectFlowInArcs(network, flow_by_slot, slots_with_flow);
  FlowWalk walk = StartFlowWalk(network, flows);
  const TaskUnits tasks = WalkFlowToTasks(network, flows, walk);
  return CollectTaskPlacements(network, walk.pending, tasks);
}

}  // namespace flowsched::flow
