#pragma once

// Gangs (JobSubmitted.min_members): a round places at least `need` of a gang
// job's tasks or none of them. The solver side's part of the rule: count a
// round's placements per gang, say which gangs the round leaves partial, and
// pick the gang to withdraw next (RoundSolver withdraws it and solves again
// within the round). Policy-agnostic: it reads only the placements and each
// task's job (its unscheduled aggregator in the network).

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "services/common/strong_id.h"
#include "services/core/decision.h"
#include "services/flow/flow_network.h"
#include "services/flow/placement_extractor.h"

namespace flowsched::core {

// One gang job as the graph manager saw it when it cut the round
// (v1::GangRequirement; gang_requirements.h makes them).
struct GangRequirement {
  JobId job;
  uint32_t min_members = 0;  // the marker on the gang's decisions
  // Tasks of the job that must be on machines after a round that places any
  // of its waiting tasks; 0: the gang formed, its tasks are placed freely.
  uint32_t need = 0;
  // Starved: free room is held for it (no other waiting task is placed)
  // until it fits (RoundSolver::Solve).
  bool hold = false;
  bool operator==(const GangRequirement&) const = default;
};

// A gang's tasks in one round's placements.
struct GangTally {
  uint32_t placed_now = 0;   // waiting before the round, on a machine after
  uint32_t on_machines = 0;  // on a machine after the round (running or new)
  uint32_t waiting = 0;      // waiting before the round
};

// The job of each placement's task, in placement order (O(task arcs)).
std::vector<JobId> JobsOfPlacements(
    const flow::FlowNetwork& network,
    const std::vector<flow::TaskPlacement>& placements);

// The tally of every gang of `gangs` (by job id); `jobs` from
// JobsOfPlacements for the same placements. O(placements log gangs).
std::map<JobId, GangTally> TallyGangs(
    const std::vector<flow::TaskPlacement>& placements,
    std::span<const JobId> jobs, std::span<const GangRequirement> gangs);

// Some task newly placed, fewer than `need` on machines.
[[nodiscard]] inline bool Partial(const GangRequirement& gang,
                                  const GangTally& tally) {
  return gang.need > 0 && tally.placed_now > 0 && tally.on_machines < gang.need;
}
// At least `need` on machines (a formed gang always is).
[[nodiscard]] inline bool Whole(const GangRequirement& gang,
                                const GangTally& tally) {
  return tally.on_machines >= gang.need;
}

// The partial gangs of a tally, job id ascending.
std::vector<JobId> PartialGangs(std::span<const GangRequirement> gangs,
                                const std::map<JobId, GangTally>& tally);

// Of `partial` (not empty), the gang to withdraw first: the one with the
// fewest tasks placed now (the least room lost), a held gang last, then the
// highest job id (the youngest). Deterministic.
JobId GangToWithdraw(std::span<const JobId> partial,
                     std::span<const GangRequirement> gangs,
                     const std::map<JobId, GangTally>& tally);

// Sets Decision::gang_min_members on every decision of a gang of `gangs`.
void MarkGangDecisions(std::span<const GangRequirement> gangs,
                       std::vector<Decision>& decisions);

}  // namespace flowsched::core
