#pragma once

// The least input any scheduler could read across racks when placing the
// population present at time 0, given only how many slots each rack has.
//
// The quality target compares the flow policy's cross-rack bytes
// with greedy's; this is the third number that says how far either is from
// what the workload allows. It is a transportation problem, solved exactly
// as a min-cost flow:
//
//   task --(bytes outside rack l)--> R_l   for each rack l holding its input
//   task --(all its bytes)--> A --> R_l    for any other rack
//   R_l --(cap: slots of l)--> S
//   task --(largest cost + 1)--> S         unplaced, when slots run out
//
// Only racks matter for cross-rack bytes, so machines and their per-machine
// limits are relaxed away: the result is a lower bound for every placement
// that respects rack capacity (Quincy's, greedy's, any other), and it is
// reached by some assignment of tasks to racks.

#include <cstdint>

#include "absl/status/statusor.h"
#include "tools/sim/workload.h"

namespace flowsched::sim {

struct LocalityFloor {
  uint64_t tasks = 0;         // present at time 0
  uint64_t placed = 0;        // min(tasks, slots of the machines at time 0)
  int64_t input_bytes = 0;    // of the placed tasks
  int64_t cross_rack_bytes = 0;  // the least possible
  [[nodiscard]] double cross_rack_share() const {
    return input_bytes > 0 ? static_cast<double>(cross_rack_bytes) /
                                 static_cast<double>(input_bytes)
                           : 0.0;
  }
};

// Solves the problem above for the tasks with submit_us == 0 and the
// machines present at time 0, each with `slots_per_machine` slots, with the
// deterministic solver; the result is certified optimal (CheckOptimalFlow)
// before it is returned. Costs are counted in MiB (input sizes rounded up);
// the bytes reported are exact for the assignment found. InvalidArgument if
// a task's input is too large to price (over 2^20 MiB).
absl::StatusOr<LocalityFloor> ComputeLocalityFloor(const Workload& workload,
                                                   uint32_t slots_per_machine);

}  // namespace flowsched::sim
