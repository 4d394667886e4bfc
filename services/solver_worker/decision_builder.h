#pragma once

// Turns the placements read from an optimal flow into decisions: a task
// that waited and now has a machine is PLACEd, a task that ran and now has
// none is PREEMPTed, a task that ran and now has another machine is
// MIGRATEd; a task that stays where it is needs no decision.

#include <cstdint>
#include <string>
#include <vector>

#include "services/flow/flow_network.h"
#include "services/flow/placement_extractor.h"

namespace flowsched::solver_worker {

enum class Action { kPlace, kPreempt, kMigrate };

struct Decision {
  uint64_t task_id = 0;
  uint64_t job_id = 0;
  uint64_t machine_id = 0;           // target; 0 for a preemption
  uint64_t previous_machine_id = 0;  // 0 for a placement
  Action action = Action::kPlace;
};

// `network` supplies each task's job (through its unscheduled aggregator).
std::vector<Decision> BuildDecisions(
    const flow::FlowNetwork& network,
    const std::vector<flow::TaskPlacement>& placements);

// "r<round>/t<task>": stable, so a consumer that sees it twice acts once.
std::string IdempotencyKey(uint64_t round_id, uint64_t task_id);

}  // namespace flowsched::solver_worker
