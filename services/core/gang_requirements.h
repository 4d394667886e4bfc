#pragma once

// The gang jobs of a cluster state as one round's GangRequirements: what
// the graph manager (and the simulator) hand the solver side with each
// round. Formed gangs are listed too (need 0), so their decisions carry the
// marker.
//
// need = min(min_members, live tasks of the job): a gang whose members
// finished needs only the ones left. It drops to 0 once that many run: a
// member that fails or is preempted later is placed again on its own.
//
// Starvation: of the gangs with need > 0 whose oldest waiting task has
// waited `hold_after_us` (<= 0: never), the longest waiting (ties: lowest
// job id) whose missing members fit the machines with nothing else on them
// (first fit by cluster::FitTask; labels aside) gets `hold`. At most one
// gang holds at a time; a gang that could never fit never holds.

#include <cstdint>
#include <vector>

#include "services/cluster/cluster_state.h"
#include "services/core/gang_rule.h"

namespace flowsched::core {

// The default hold age of the services and the simulator.
inline constexpr int64_t kDefaultGangHoldAfterUs = 60'000'000;

// O(jobs + tasks of gang jobs), plus for the gangs that waited past the
// age O(members * machines tried); job id ascending.
std::vector<GangRequirement> GangRequirementsOf(
    const cluster::ClusterState& state, int64_t now_us, int64_t hold_after_us);

}  // namespace flowsched::core
