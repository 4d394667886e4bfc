#pragma once

// One scheduling decision on domain types: what the solver side proposes
// and what applying a round consumes. Protobuf (v1::PlacementDecision) stays
// at the edges; services/codec converts.

#include <cstdint>

#include "services/common/strong_id.h"

namespace flowsched::core {

// kUnspecified only arrives from outside (a record without an action);
// applying it leaves it stale.
enum class Action : uint8_t { kUnspecified, kPlace, kPreempt, kMigrate };

struct Decision {
  TaskId task;
  JobId job;           // 0 where the producer does not know it
  MachineId machine;   // the target; 0 for a preemption
  MachineId previous;  // where the task ran; 0 for a placement
  Action action = Action::kUnspecified;
  bool operator==(const Decision&) const = default;
};

}  // namespace flowsched::core
