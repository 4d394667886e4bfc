#pragma once

// Reads task placements out of an optimal flow (Firmament, OSDI 2016,
// Listing 1): starting at the machine nodes, it walks flow backwards and
// hands each node the list of machines its outgoing flow reached, until the
// lists arrive at task nodes. Flow through aggregators (X, racks,
// equivalence classes) is followed; flow that reaches the sink another way
// (unscheduled aggregators) leaves its tasks unplaced.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "services/flow/flow_network.h"

namespace flowsched::flow {

struct TaskPlacement {
  NodeId task_node = kNoNode;
  uint64_t task_id = 0;
  uint64_t machine_id = 0;  // 0: the flow leaves the task unscheduled
  uint64_t running_on = 0;  // where the task ran when the round was cut
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

}  // namespace flowsched::flow
