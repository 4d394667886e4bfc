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
    return absl::InternalError(absl::StrCat(
        "flow covers ", flow_by_slot.size(), " arc slots, network has ",
        network.arc_slot_count()));
  }
  const size_t n = network.node_slot_count();
  std::vector<MachineList> lists(n);
  // A node is ready once every outgoing flow arc that leads to another
  // node than the sink has handed its machines back (Kahn's order on the
  // flow DAG).
  std::vector<int64_t> pending(n, 0);
  std::deque<NodeId> ready;
  network.ForEachNode([&](NodeId id, const NodeData& data) {
    if (data.kind == NodeKind::kSink) return;
    network.ForEachOutArc(id, [&](const ArcView& arc) {
      if (flow_by_slot[arc.slot] <= 0) return;
      if (network.node(arc.dst).kind == NodeKind::kSink) return;
      ++pending[id];
    });
  });
  network.ForEachNode([&](NodeId id, const NodeData& data) {
    if (data.kind == NodeKind::kMachine) {
      int64_t inflow = 0;
      network.ForEachInArc(id, [&](const ArcView& arc) {
        inflow += flow_by_slot[arc.slot];
      });
      if (inflow > 0) lists[id].emplace_back(id, inflow);
    }
    if (data.kind != NodeKind::kSink && data.kind != NodeKind::kTask &&
        pending[id] == 0) {
      ready.push_back(id);
    }
  });

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
    network.ForEachInArc(node, [&](const ArcView& arc) {
      const int64_t units = flow_by_slot[arc.slot];
      if (units <= 0) return;
      const bool to_task = network.node(arc.src).kind == NodeKind::kTask;
      if (to_task) {
        scratch.clear();
        MoveUnits(lists[node], scratch, units);
        for (const auto& [machine, count] : scratch) {
          task_machine[arc.src] = machine;
          task_units[arc.src] += count;
        }
      } else {
        MoveUnits(lists[node], lists[arc.src], units);
      }
      if (--pending[arc.src] == 0 && !to_task) ready.push_back(arc.src);
    });
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
      status = absl::InternalError(absl::StrCat(
          "task node ", id, " reaches ", units, " machine units"));
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
