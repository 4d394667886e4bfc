#pragma once

// Explains one task's fate in a solved round: where its flow goes (the
// arcs and costs on its path), or that it waits and why, and the cheapest
// alternatives it had (other machines reachable from its node, with the
// cost of the cheapest path to each and whether that path had room left).
//
// Costs are marginal: an arc's cost for one more unit is the cost of its
// first convex piece with room left (of its last piece if it is full).
// The explanation is local to the task; the solver's choice is global (a
// cheaper path may be taken by another task for which it saves more), so
// "why" is the local evidence, not a proof.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/common/strong_id.h"
#include "services/flow/flow_network.h"
#include "services/flow/network_builder.h"

namespace flowsched::flow {

struct ExplainedArc {
  NodeId src = kNoNode;
  NodeId dst = kNoNode;
  NodeKind dst_kind = NodeKind::kUnused;
  uint64_t dst_entity = 0;  // machine, job or aggregator key
  int64_t capacity = 0;     // all pieces
  int64_t cost = 0;         // marginal (see above)
  int64_t flow = 0;
};

struct PathOption {
  uint64_t machine_id = 0;
  int64_t path_cost = 0;
  bool has_room = false;  // every arc on the path has residual capacity
  std::vector<ExplainedArc> arcs;
};

struct TaskExplanation {
  uint64_t task_id = 0;
  uint64_t machine_id = 0;  // 0: waits (or is preempted)
  uint64_t running_on = 0;
  std::vector<ExplainedArc> path;  // the task's flow, task to machine or U_j
  int64_t path_cost = 0;
  bool has_unscheduled_arc = false;
  int64_t unscheduled_cost = 0;  // its arc to U_job
  std::string reason;
  std::vector<PathOption> alternatives;  // cheapest first, placed one excluded
};

// `flow_by_slot` as for ExtractPlacements. NotFound if the task has no
// node; Internal if the flow is inconsistent.
absl::StatusOr<TaskExplanation> ExplainTask(
    const FlowNetwork& network, const std::vector<int64_t>& flow_by_slot,
    TaskId task, const NetworkBuilder& builder, size_t max_alternatives = 5);

}  // namespace flowsched::flow
