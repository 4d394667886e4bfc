#pragma once

// Reads task placements out of an optimal flow (Firmament, OSDI 2016,
// Listing 1): starting at the machine nodes, it walks flow backwards and
// hands each node the list of machines its outgoing flow reached, until the
// lists arrive at task nodes. Flow through aggregators (X, racks,
// equivalence classes) is followed; flow that reaches the sink another way
// (unscheduled aggregators) leaves its tasks unplaced.

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "services/flow/flow_network.h"

namespace flowsched::flow {

struct TaskPlacement {
  NodeId task_node = kNoNode;
  uint64_t task_id = 0;
  uint64_t machine_id = 0;  // 0: the flow leaves the task unscheduled
  uint64_t running_on = 0;  // where the task ran when the round was cut
  bool operator==(const TaskPlacement&) const = default;
};

// Machines a node's outgoing flow reached, as (machine node, units) runs.
using MachineList = std::vector<std::pair<NodeId, int64_t>>;
// Moves `units` from the back of `from` to the back of `to` (fewer if
// `from` runs out): how both extractions hand machines back along flow.
void MoveMachineUnits(MachineList& from, MachineList& to, int64_t units);

// The backward walk both extractions share, over nodes numbered by the
// caller (node ids, or a walk's own indices): the arcs with flow grouped by
// head in a CSR (in_arcs[first_in[v] .. first_in[v + 1]) enter v), each
// node's flow arcs still to hand machines back, its machine list, and the
// ready queue. Walk takes ready nodes in queue order and hands each one's
// machines back along its in-arcs: a task tail records the machine and the
// units it reached (tasks are most of a network and take at most one unit,
// so they get these instead of a list); any other tail adds them to its
// list and joins the queue once its last flow arc has handed back (Kahn's
// order on the flow DAG).
struct FlowWalk {
  struct InArc {
    uint32_t src;
    int64_t units;
  };
  std::vector<uint32_t> first_in;
  std::vector<InArc> in_arcs;
  std::vector<int64_t> pending;
  std::vector<MachineList> lists;
  std::vector<uint32_t> ready;
  std::vector<NodeId> task_machine;
  std::vector<int64_t> task_units;
  MachineList scratch;

  [[nodiscard]] int64_t Inflow(uint32_t v) const {
    int64_t inflow = 0;
    for (uint32_t i = first_in[v]; i < first_in[v + 1]; ++i) {
      inflow += in_arcs[i].units;
    }
    return inflow;
  }
  // `is_task(v)`: v's units are recorded, not listed; `on_listed(v)`: v's
  // empty list is about to get entries.
  template <typename IsTask, typename OnListed>
  void Walk(const IsTask& is_task, const OnListed& on_listed) {
    for (size_t next = 0; next < ready.size(); ++next) {
      const uint32_t node = ready[next];
      for (uint32_t i = first_in[node]; i < first_in[node + 1]; ++i) {
        const auto [src, units] = in_arcs[i];
        const bool to_task = is_task(src);
        if (to_task) {
          scratch.clear();
          MoveMachineUnits(lists[node], scratch, units);
          for (const auto& [machine, count] : scratch) {
            task_machine[src] = machine;
            task_units[src] += count;
          }
        } else {
          if (lists[src].empty()) on_listed(src);
          MoveMachineUnits(lists[node], lists[src], units);
        }
        if (--pending[src] == 0 && !to_task) ready.push_back(src);
      }
    }
  }
};

// `flow_by_slot[s]` is the flow on arc slot s of `network`.
// Returns one entry per task node, in node id order. Internal if the flow
// is inconsistent (a task node with more than one unit leaving it, flow
// that cannot be traced, or a cycle of flow).
//
// `slots_with_flow`, when given, must have bit s % 64 of word s / 64 set
// for every s with flow_by_slot[s] > 0 (others are ignored): only those
// slots are read (a tenth of a scheduling
// network's), in the same order, so the placements are the same.
absl::StatusOr<std::vector<TaskPlacement>> ExtractPlacements(
    const FlowNetwork& network, const std::vector<int64_t>& flow_by_slot,
    const std::vector<uint64_t>* slots_with_flow = nullptr);

// ExtractPlacements with its work arrays kept from one call to the next:
// a caller that extracts every round (RoundSolver) allocates them once and
// keeps the machine lists' capacity, instead of allocating a list per
// machine and arrays per node each round. Not thread-safe.
class PlacementExtractor {
 public:
  absl::StatusOr<std::vector<TaskPlacement>> Extract(
      const FlowNetwork& network, const std::vector<int64_t>& flow_by_slot,
      const std::vector<uint64_t>* slots_with_flow = nullptr);

 private:
  void CollectFlowInArcs(const FlowNetwork& network,
                         const std::vector<int64_t>& flow_by_slot,
                         const std::vector<uint64_t>* slots_with_flow);
  void StartFlowWalk(const FlowNetwork& network);
  void WalkFlowToTasks(const FlowNetwork& network);
  absl::StatusOr<std::vector<TaskPlacement>> CollectTaskPlacements(
      const FlowNetwork& network) const;

  // Over node ids.
  FlowWalk walk_;
  std::vector<uint32_t> next_;  // CollectFlowInArcs' cursor per head
  std::vector<NodeId> listed_;  // nodes whose list may hold entries
};

}  // namespace flowsched::flow
