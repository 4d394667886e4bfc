#pragma once

// A scheduler as a replay or simulation drives it, in-process: the flow
// scheduler (the scheduling core the services run: core::PolicyNetwork for
// the graph manager's side, core::RoundSolver for the solver worker's) or
// a baseline (services/baselines). Each round it sees the cluster state
// and what changed since its last round, and proposes decisions; the
// caller applies them (ApplyDecisions) when the round is over, so a
// simulator can let the round's runtime pass first.
//
// Used by `flowsched compare` and `flowsched simulate`.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "services/baselines/baseline_scheduler.h"
#include "services/cluster/change_set.h"
#include "services/cluster/cluster_state.h"
#include "services/common/strong_id.h"
#include "services/core/decision.h"
#include "services/core/round_apply.h"

namespace flowsched::sim {

struct RoundDecisions {
  std::vector<core::Decision> decisions;
  // Where the round's time went (wall clock, ms). Baselines only schedule.
  double sync_ms = 0;   // policy: state changes into the network
  double solve_ms = 0;  // min-cost flow, or the baseline's Schedule
  // With the incremental mirror, the check includes exporting the repaired
  // network for it, and the extraction reading the flow per arc slot.
  double check_ms = 0;    // CheckOptimalFlow
  double extract_ms = 0;  // placement extraction
  // Check and extraction run side by side (CheckAndExtract): their wall
  // clock, which is what the round costs.
  double check_extract_ms = 0;
  std::string algorithm;  // the solver that produced the flow
  [[nodiscard]] double total_ms() const {
    return sync_ms + solve_ms + check_extract_ms;
  }
};

class Contender {
 public:
  virtual ~Contender() = default;
  // `changes`: entities touched since the previous call (events and the
  // previous round's applied decisions); `now_us`: the time the policy
  // prices the round at (SimOptions::price_at).
  virtual absl::StatusOr<RoundDecisions> Decide(
      const cluster::ClusterState& state, const cluster::ChangeSet& changes,
      int64_t now_us) = 0;
};

// "flow:<policy>" (any flow::PolicyNames() entry) or a baseline name
// (baselines::BaselineNames(), default options). `solver` is
// core::kIncrementalRounds or a solver::SolverNames() entry.
// `export_dir`, if not empty, receives the network of each of the first
// `export_rounds` rounds of a flow contender as DIMACS
// (round-<k>.dimacs), to replay a round with `flowsched solve`.
absl::StatusOr<std::unique_ptr<Contender>> MakeContender(
    const std::string& name, const std::string& solver,
    const std::string& export_dir = "", uint32_t export_rounds = 0);

// A comma-separated list of contender names. Policy parameters are
// comma-separated too, so a piece holding '=' that does not start with
// "flow:" continues the flow policy before it: "fgd,flow:gpu-fgd:a=1,b=2" is
// {"fgd", "flow:gpu-fgd:a=1,b=2"}. Empty pieces are skipped.
std::vector<std::string> SplitContenderList(std::string_view list);

// A baseline built by the caller (baselines::MakeBaseline with options: a
// seed, FGD's target workload) as a contender. Its placements keep the
// devices the baseline named (core::Decision::devices).
std::unique_ptr<Contender> MakeBaselineContender(
    std::unique_ptr<baselines::BaselineScheduler> baseline);

struct AppliedDecisions {
  std::vector<std::pair<TaskId, MachineId>> placed;  // incl. migrated to
  std::vector<TaskId> preempted_tasks;
  uint64_t preempted = 0, migrated = 0, stale = 0;
};

// Applies a round with the graph manager's rule (core::ApplyRound) and
// lists what the simulator follows up. Touched entities are merged into
// `changes`. `started_at`, if set, gives a placed task's start time instead
// of now_us (the warm-up places tasks that were already running when the
// simulation starts).
AppliedDecisions ApplyDecisions(const RoundDecisions& round,
                                cluster::ClusterState& state, int64_t now_us,
                                cluster::ChangeSet& changes,
                                const core::StartTimeFn& started_at = nullptr);

}  // namespace flowsched::sim
