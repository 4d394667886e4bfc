#pragma once

// Applies one solver round's decisions to the cluster state: the one rule
// the graph manager, its ledger replay and the simulator share.
//
// Order: preemptions, then migrations, then placements, each group by task
// id (decisions arrive from several partitions in no fixed order, and a
// placement onto room that a preemption of the same round frees must not
// depend on which came first). A migration into a machine that another
// migration of the round leaves is retried while any migration still
// succeeds: a chain resolves, a cycle of full machines stays stale and is
// decided again next round. A decision that does not apply (the task or
// machine is gone, the machine is full) is stale and changes nothing.
// Devices are the state's to choose: the solver's network bounds how many
// tasks fit, the state picks which devices each applied task holds; a
// placement naming its devices (Decision::devices) gets exactly those, or
// is stale.
//
// Gangs stay whole here too: when a placement of a gang job (Job::gang())
// goes stale and the job then runs fewer than min(min_members, live tasks),
// the gang's placements of this round are taken back (preempted at the
// same time, so they wait again) and reported stale with the reason. A
// replay of the same decisions takes the same steps.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "services/cluster/change_set.h"
#include "services/cluster/cluster_state.h"
#include "services/core/decision.h"

namespace flowsched::core {

struct DecisionOutcome {
  size_t index = 0;  // the decision's position in the input
  bool applied = false;
  std::string stale_reason;  // empty when applied
  // An applied placement or migration: the accelerator devices the state
  // assigned the task on its new machine (cluster::FitTask's choice).
  std::vector<cluster::DeviceShare> devices;
  // An applied placement: how long the task waited for it, from the start
  // of its waiting period (submission, preemption, machine loss) to its
  // start. 0 otherwise.
  int64_t waited_us = 0;
};

struct AppliedRound {
  // One per decision, in the order they were applied (see above).
  std::vector<DecisionOutcome> outcomes;
  uint64_t applied = 0;
  uint64_t stale = 0;
  uint64_t placed = 0;     // applied placements
  uint64_t preempted = 0;  // applied preemptions
  uint64_t migrated = 0;   // applied migrations
};

// The time a placed task starts at: `now_us` unless the caller knows better
// (a simulator's warm-up places tasks that were running already).
using StartTimeFn = std::function<int64_t(TaskId)>;

// Applies `decisions` at `now_us`; records touched entities in `changes`.
AppliedRound ApplyRound(std::span<const Decision> decisions,
                        cluster::ClusterState& state, int64_t now_us,
                        cluster::ChangeSet& changes,
                        const StartTimeFn& start_time = nullptr);

}  // namespace flowsched::core
