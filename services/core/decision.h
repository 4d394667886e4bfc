#pragma once

// One scheduling decision on domain types: what the solver side proposes
// and what applying a round consumes. Protobuf (v1::PlacementDecision) stays
// at the edges; services/codec converts.

#include <cstdint>
#include <vector>

#include "services/cluster/cluster_types.h"
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
  // The gang marker: the job's min_members when it is a gang (> 1), else 0
  // (gang_rule.h; v1::PlacementDecision.gang_job_id and gang_min_members).
  uint32_t gang_min_members = 0;
  // A placement's devices as the scheduler chose them (the GPU baselines;
  // in-process only, not encoded on the wire). Empty: the state picks them
  // (cluster::FitTask), as for every flow decision.
  std::vector<cluster::DeviceShare> devices;
  bool operator==(const Decision&) const = default;
};

}  // namespace flowsched::core
