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
  struct FlowInArc {
    NodeId src;
    int64_t units;
  };
  void CollectFlowInArcs(const FlowNetwork& network,
                         const std::vector<int64_t>& flow_by_slot,
                         const std::vector<uint64_t>* slots_with_flow);
  void StartFlowWalk(const FlowNetwork& network);
  void WalkFlowToTasks(const FlowNetwork& network);
  absl::StatusOr<std::vector<TaskPlacement>> CollectTaskPlacements(
      const FlowNetwork& network) const;

  // The arcs with flow, grouped by head in a CSR: in_arcs_[first_in_[v] ..
  // first_in_[v + 1]) enter node v.
  std::vector<uint32_t> first_in_;
  std::vector<FlowInArc> in_arcs_;
  std::vector<uint32_t> next_;
  // The backward walk: per node the flow arcs still to hand machines back,
  // the machines it holds, and the nodes ready to hand theirs on (a queue
  // read from ready_head_).
  std::vector<int64_t> pending_;
  std::vector<MachineList> lists_;
  std::vector<NodeId> listed_;  // nodes whose list may hold entries
  std::vector<NodeId> ready_;
  size_t ready_head_ = 0;
  // The machine and unit count each task node's flow reached: tasks are
  // most of the network and receive at most one unit, so they get these
  // instead of a list of their own.
  std::vector<NodeId> task_machine_;
  std::vector<int64_t> task_units_;
  MachineList scratch_;
};

}  // namespace flowsched::flow
