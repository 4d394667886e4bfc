#pragma once

// The simulator's input, whichever source it came from (a Google 2011
// trace, the openb trace or the synthetic generator): machines with their
// lifetimes and tasks with their arrival, runtime and requests. Sizes are
// normalised like the trace's (1.0 = the largest machine); the simulator turns
// them into slots or CPU/memory by its --model.

#include <cstdint>
#include <string>
#include <vector>

#include "services/cluster/cluster_types.h"

namespace flowsched::sim {

// A runtime or removal time that never comes within the simulation.
inline constexpr int64_t kForever = -1;

struct SimMachine {
  uint64_t id = 0;
  std::string rack;
  int64_t add_us = 0;
  int64_t remove_us = kForever;
  double cpu = 0;     // normalised; 0: not reported
  double memory = 0;  // normalised; 0: not reported
};

struct SimTask {
  uint64_t task_id = 0;  // unique over the workload
  uint64_t job_id = 0;
  int64_t submit_us = 0;           // 0: present when the simulation starts
  int64_t duration_us = kForever;  // present at 0: the remaining runtime
  // Present at 0: how long the task has run already (its Quincy theta when
  // the simulation starts). The trace does not say (0); the generator draws
  // it, so that the initial population's running costs are not all equal.
  int64_t age_us = 0;
  double cpu = 0;
  double memory = 0;
  int32_t priority = 0;
  bool service = false;  // long-running service (synthetic only)
  std::vector<cluster::DataLocality> input;
  int64_t input_bytes = 0;
};

struct Workload {
  std::vector<SimMachine> machines;
  std::vector<SimTask> tasks;  // sorted by submit_us, then task_id
};

}  // namespace flowsched::sim
