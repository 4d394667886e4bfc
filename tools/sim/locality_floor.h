#pragma once

// The least input any scheduler could read across racks when placing the
// population present at time 0, given only how many slots (or how much CPU
// or memory: FloorResource) each rack has.
//
// The quality target compares the flow policy's cross-rack bytes
// with greedy's; this is the third number that says how far either is from
// what the workload allows. It is a transportation problem, solved exactly
// as a min-cost flow:
//
//   task --(its input outside rack l)--> R_l   for each rack l holding some
//   task --(all its input)--> A --> R_l        for any other rack
//   R_l --(cap: slots of l)--> S
//   task --(largest cost + 1)--> S             unplaced, when slots run out
//
// Only racks matter for cross-rack bytes, so machines and their per-machine
// limits are relaxed away: the result is a lower bound for every placement
// that respects rack capacity (Quincy's, greedy's, any other), and with
// slots it is reached by some assignment of tasks to racks.

#include <cstdint>

#include "absl/status/statusor.h"
#include "tools/sim/workload.h"

namespace flowsched::sim {

struct LocalityFloor {
  uint64_t tasks = 0;  // present at time 0
  // The tasks the racks hold whole: min(tasks, slots of the machines at
  // time 0) for slots. When fewer than `tasks`, the floor leaves out the
  // tasks whose input is cheapest to leave out, so it covers another set
  // than a scheduler's warm-up and bounds it only loosely.
  uint64_t placed = 0;
  int64_t input_bytes = 0;       // of the placed tasks, as the simulator counts
  int64_t cross_rack_bytes = 0;  // the least possible
  // False when sizes had to be priced in a unit coarser than their common
  // divisor (the solver's cost bound), or for a resource floor (tasks split
  // over racks): cross_rack_bytes is then a lower bound of the least
  // possible, not its value.
  bool exact = true;
  [[nodiscard]] double cross_rack_share() const {
    return input_bytes > 0 ? static_cast<double>(cross_rack_bytes) /
                                 static_cast<double>(input_bytes)
                           : 0.0;
  }
};

// Solves the problem above for the tasks and machines present when a
// simulation at `speedup` starts (times rounded as the simulator does),
// each machine with `slots_per_machine` slots, with the deterministic
// solver; the result is certified optimal (CheckOptimalFlow) before it is
// returned. A task on rack l reads T - B_l across racks, with T and B_l as
// cluster::LocateInput gives them over the machines present at time 0, as
// the simulator's InputLocality counts. Costs are
// counted in the greatest common divisor of the sizes, so they are exact
// (see LocalityFloor::exact). InvalidArgument for a speed-up <= 0 or an
// input entry over 2^50 bytes.
absl::StatusOr<LocalityFloor> ComputeLocalityFloor(const Workload& workload,
                                                   uint32_t slots_per_machine,
                                                   double speedup = 1.0);

// What a rack's capacity and a task's size are counted in by the resource
// floor: the CPU or the memory the simulator's cpu-mem model gives them.
enum class FloorResource { kCpu, kMemory };

// The same problem with each rack holding its machines' `resource` and
// each task taking its request of it, a task free to split over racks (the
// linear relaxation): a lower bound for every placement within that
// resource, so not `exact` (unless every size is 1). A machine that does
// not report the resource (0) is not bounded by it, as in the fit rule.
// The cpu-mem model has two resources; the larger of their floors is the
// tighter bound. InvalidArgument as above, or for sizes adding up to 2^60.
absl::StatusOr<LocalityFloor> ComputeLocalityFloor(const Workload& workload,
                                                   FloorResource resource,
                                                   double speedup = 1.0);

}  // namespace flowsched::sim
