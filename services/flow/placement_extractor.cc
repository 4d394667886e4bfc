#include "services/flow/placement_extractor.h"

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

}  // namespace

absl::StatusOr<std::vector<TaskPlacement>> ExtractPlacements(
    const FlowNetwork& network, const std::vector<int64_t>& flow_by_slot) {
  if (flow_by_slot.size() < network.arc_slot_count()) {
    return absl::InternalError(absl::StrCat("flow covers ", flow_by_slot.size(),
                                            " arc slots, network has ",
                                            network.arc_slot_count()));
  }
  // Only arcs with flow matter, a tenth of a scheduling network's arcs:
  // one sequential pass over the slots collects them, grouped by head in a
  // CSR, so the walk below never follows the network's arc lists (at 1.5
  // million arcs that pointer chasing was most of a round).
  const size_t n = network.node_slot_count();
  struct FlowArc {
    NodeId src;
    int64_t units;
  };
  std::vector<uint32_t> first_in(n + 1, 0);
  std::vector<std::pair<NodeId, FlowArc>> flows;
  for (ArcSlot slot = 0; slot < network.arc_slot_count(); ++slot) {
    const int64_t units = flow_by_slot[slot];
    NodeId src = kNoNode, dst = kNoNode;
    if (units <= 0 || !network.ArcEnds(slot, src, dst)) continue;
    flows.push_back({dst, FlowArc{src, units}});
    ++first_in[dst + 1];
  }
  for (size_t v = 0; v < n; ++v) first_in[v + 1] += first_in[v];
  std::vector<FlowArc> in_arcs(flows.size());
  {
    std::vector<uint32_t> next(first_in.begin(), first_in.end() - 1);
    for (const auto& [dst, arc] : flows) in_arcs[next[dst]++] = arc;
  }
  const auto kind = [&](NodeId id) { return network.kind(id); };

  // A node is ready once every outgoing flow arc that leads to another
  // node than the sink has handed its machines back (Kahn's order on the
  // flow DAG).
  std::vector<int64_t> pending(n, 0);
  std::vector<MachineList> lists(n);
  std::deque<NodeId> ready;
  for (NodeId v = 0; v < n; ++v) {
    if (first_in[v] == first_in[v + 1] || kind(v) == NodeKind::kSink) continue;
    for (uint32_t i = first_in[v]; i < first_in[v + 1]; ++i) {
      ++pending[in_arcs[i].src];
    }
  }
  for (NodeId v = 0; v < n; ++v) {
    if (first_in[v] == first_in[v + 1]) continue;
    const NodeKind k = kind(v);
    if (k == NodeKind::kMachine) {
      int64_t inflow = 0;
      for (uint32_t i = first_in[v]; i < first_in[v + 1]; ++i) {
        inflow += in_arcs[i].units;
      }
      lists[v].emplace_back(v, inflow);
    }
    if (k != NodeKind::kSink && k != NodeKind::kTask && pending[v] == 0) {
      ready.push_back(v);
    }
  }

  // Task nodes are most of the network and receive at most one unit, so
  // they get a machine and a unit count instead of a list of their own:
  // one allocation per task made extraction the largest cost of a round at
  // 150,000 tasks. `scratch` keeps its capacity across tasks.
  std::vector<NodeId> task_machine(n, kNoNode);
  std::vector<int64_t> task_units(n, 0);
  MachineList scratch;
  while (!ready.empty()) {
    const NodeId node = ready.front();
    ready.pop_front();
    for (uint32_t i = first_in[node]; i < first_in[node + 1]; ++i) {
      const auto [src, units] = in_arcs[i];
      const bool to_task = kind(src) == NodeKind::kTask;
      if (to_task) {
        scratch.clear();
        MoveUnits(lists[node], scratch, units);
        for (const auto& [machine, count] : scratch) {
          task_machine[src] = machine;
          task_units[src] += count;
        }
      } else {
        MoveUnits(lists[node], lists[src], units);
      }
      if (--pending[src] == 0 && !to_task) ready.push_back(src);
    }
  }

  std::vector<TaskPlacement> placements;
  absl::Status status;
  network.ForEachNode([&](NodeId id, const NodeData& data) {
    if (data.kind != NodeKind::kTask || !status.ok()) return;
    if (pending[id] != 0) {
      status = absl::InternalError(
          absl::StrCat("flow from task node ", id, " cannot be traced"));
      return;
    }
    const int64_t units = task_units[id];
    if (units > 1) {
      status = absl::InternalError(
          absl::StrCat("task node ", id, " reaches ", units, " machine units"));
      return;
    }
    TaskPlacement placement{id, data.entity_id, 0, data.running_on};
    if (units == 1) {
      placement.machine_id = network.node(task_machine[id]).entity_id;
    }
    placements.push_back(placement);
  });
  if (!status.ok()) return status;
  return placements;
}

}  // namespace flowsched::flow
