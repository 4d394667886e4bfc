#pragma once

// Turns the placements read from an optimal flow into decisions: a task
// that waited and now has a machine is PLACEd, a task that ran and now has
// none is PREEMPTed, a task that ran and now has another machine is
// MIGRATEd; a task that stays where it is needs no decision.

#include <cstdint>
#include <string>
#include <vector>

#include "services/common/strong_id.h"
#include "services/core/decision.h"
#include "services/flow/flow_network.h"
#include "services/flow/placement_extractor.h"

namespace flowsched::core {

// The job of a task node: the entity of its arc to a kJobUnscheduled node
// (0 if it has none). O(out-arcs of the task).
JobId JobOfTask(const flow::FlowNetwork& network, flow::NodeId task);

// `network` supplies each task's job (through its unscheduled aggregator).
std::vector<Decision> BuildDecisions(
    const flow::FlowNetwork& network,
    const std::vector<flow::TaskPlacement>& placements);

// "r<round>/t<task>": stable, so a consumer that sees it twice acts once.
std::string IdempotencyKey(RoundId round_id, TaskId task_id);

}  // namespace flowsched::core
