#pragma once

// Which rack each waiting shape of a locality profile gets room in first.
//
// Reserving room machine by machine (ProfilePolicy::Reserve) splits each
// rack's room before the solve, so the solver cannot trade it: when more
// work reads from a rack than the rack holds, who stays there is decided by
// the list order, and a task that could read as much in its second rack
// takes the place of one that cannot. The rack plan decides it first, for
// the whole round, as Quincy's rack aggregators would: the transportation
// problem over the shapes that read input (work without input is offered
// room after them anyway)
//
//   shape --(waiting x size, price of its input outside rack l)--> R_l
//   shape --(waiting x size, price of all its input)--> A --> R_l
//   R_l --(the rack's free room)--> S
//   shape --(dearer than any rack)--> S       room runs out
//
// with room counted in one dimension: a task's size is its dominant share
// of the largest machine (CPU, memory, one slot) and a rack's room the sum
// of its machines' least free share. Between racks holding the same share
// of a shape's input, the less wanted one wins (what the shapes reading
// most there would take of its room). That relaxes the machines' several
// dimensions into one, so the plan is advice: each machine's room still
// goes only to shapes that fit it (MachineRoom), in the order the plan
// gives.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "services/cluster/cluster_state.h"
#include "services/flow/request_shapes.h"

namespace flowsched::flow {

// A shape without a planned rack.
inline constexpr int kNoRack = -1;

// Per shape, the rack it should take room in first, as an index into its
// input_racks: the one the optimal transportation sends most of its
// waiting work to; kNoRack if it reads nothing there (no input, or the plan
// sends it elsewhere or nowhere). A machine's room counts at most
// `max_tasks_per_machine` tasks (0: its slots). Solved by the deterministic
// solver, so the same state and shapes give the same plan (recovery
// rebuilds the same network). An error only if the solver refuses the
// problem (sizes beyond its limits).
absl::StatusOr<std::vector<int>> PlanRacks(
    const cluster::ClusterState& state, const std::vector<RequestShape>& shapes,
    int64_t max_tasks_per_machine);

}  // namespace flowsched::flow
