#pragma once

// Solves one round on a replica of the graph manager's network: the solver
// worker's and the simulator's common step. Mirror the changes, solve
// (repairing the previous optimal flow, or from scratch), check the result
// (feasible and optimal: guarantee 6) while extracting placements, and turn
// the placements into decisions. Nothing unchecked leaves Solve. Gangs
// (gang_rule.h) are placed whole or not at all within the round: a gang the
// checked flow leaves partial is withdrawn and the round solved again, and
// every pass's flow is checked.
//
// Thread-safety: none; Solve uses two threads internally (CheckAndExtract).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/core/decision.h"
#include "services/core/gang_rule.h"
#include "services/core/incremental_mirror.h"
#include "services/flow/flow_network.h"
#include "services/flow/graph_change.h"
#include "services/flow/incremental_placements.h"
#include "services/flow/placement_extractor.h"
#include "services/solver/mcmf_solver.h"

namespace flowsched::core {

// The name that selects IncrementalMirror (repair each round, cold starts by
// the default portfolio) rather than one from-scratch algorithm.
inline constexpr std::string_view kIncrementalRounds = "incremental";
// Passes of a round that withdraw one partial gang each; later passes
// withdraw every partial gang at once (RoundSolver::Solve).
inline constexpr uint32_t kSingleGangPasses = 8;

struct SolvedRound {
  // Not OK: the solver failed, the network is infeasible or the checker
  // refused the flow; nothing else below is meaningful then.
  absl::Status verdict;
  // The incremental state may be inconsistent after a failed repair: the
  // replica must be rebuilt from a snapshot (Reset, then apply one).
  bool replica_lost = false;
  std::vector<Decision> decisions;  // placements that differ from now
  // Task nodes in the network, and those the flow places on a machine.
  uint64_t tasks = 0;
  uint64_t tasks_placed = 0;
  // A repaired pass read every arc with flow (flow::IncrementalPlacements
  // ::last_full), or the round was solved from scratch.
  bool extracted_in_full = false;
  int64_t total_cost = 0;
  std::string algorithm;  // the algorithm whose flow was checked
  double solve_ms = 0;
  double check_ms = 0;          // the checker, including its input's export
  double extract_ms = 0;        // the extraction (what changed, when repaired)
  double check_extract_ms = 0;  // both, side by side (what the round paid)
  // Solves the round took: 1, plus one for each gang withdrawal and hold.
  uint32_t passes = 0;
  std::vector<JobId> gangs_withdrawn;  // placed none of, job id ascending
  bool held = false;                   // room held for a starved gang
};

class RoundSolver {
 public:
  // `algorithm`: kIncrementalRounds or a solver::SolverNames() entry.
  // InvalidArgument for any other name.
  static absl::StatusOr<std::unique_ptr<RoundSolver>> Create(
      std::string_view algorithm);

  // Applies one change to the replica (and the incremental solver). An
  // error leaves the replica unusable until Reset.
  absl::Status Apply(const flow::GraphChange& change);
  // Empties the replica: a snapshot rebuilds it.
  void Reset();

  // Solves the replica. `deterministic`: from scratch by
  // solver::kDeterministicSolver (or the configured one-shot algorithm) on
  // a canonical copy, so the flow is a function of the network alone, not
  // of the history of changes that built the replica.
  //
  // `gangs`: the round's gang jobs. After each checked pass, a gang with
  // tasks newly placed but fewer than `need` on machines is withdrawn (its
  // waiting tasks blocked from every machine, TaskArcBlocker) and the round
  // solved again: one gang per pass (GangToWithdraw) for the first
  // kSingleGangPasses, then every partial gang at once. A gang with `hold`
  // that the first pass leaves short gets the room alone: every other
  // waiting task is blocked for the round, so what frees up stays free
  // until the gang fits; unless holding is of no use (the hold is then
  // released and the gang withdrawn): it does not fit with nothing else on
  // the machines, or it cannot take all the room the others lost (room the
  // policy reserved for other request shapes). Each pass
  // blocks a gang not blocked before, so there are at most gangs + 3
  // passes. The blocked arcs are set back on the replica before Solve
  // returns (the replica stays what the graph manager's changes made it;
  // a failure there is reported as replica_lost). Every decision of a gang
  // carries its marker (MarkGangDecisions).
  SolvedRound Solve(bool deterministic,
                    std::span<const GangRequirement> gangs = {});

  [[nodiscard]] const flow::FlowNetwork& network() const { return network_; }
  // Keeps the problem each pass solved, for problem(). Off by default: a
  // repaired pass needs no export of the network (IncrementalMirror::
  // Certify), and the export costs O(network).
  void set_keep_problems(bool keep) { keep_problems_ = keep; }
  // The problem the last Solve solved (its last pass when gangs were
  // withdrawn), for a DIMACS export; null unless set_keep_problems(true).
  [[nodiscard]] const solver::McmfProblem* problem() const {
    return keep_problems_ ? &result_.problem : nullptr;
  }
  // Repaired passes also extract in full and fail (Internal) when the
  // kept placements differ: for tests and for chasing a suspected slip.
  // Off by default; it costs what the kept placements save.
  void set_verify_extraction(bool verify) { verify_extraction_ = verify; }
  // kIncrementalRounds or the one-shot algorithm's name.
  [[nodiscard]] std::string_view name() const;

 private:
  RoundSolver() = default;
  // One pass: solve `solved` (network_ or its canonical copy), check and
  // extract into placements_ (every task's if `all_tasks`, else at least
  // those placed elsewhere than they run); no decisions. Times add up in
  // `round`.
  void SolvePass(const flow::FlowNetwork& solved, bool deterministic,
                 bool all_tasks, SolvedRound& round);
  // A repaired pass's check (IncrementalMirror::Certify) and extraction
  // of what changed from the certified flow.
  void CertifyAndExtract(bool all_tasks, SolvedRound& round);
  // The gang passes after the first one (see Solve).
  void EnforceGangs(flow::FlowNetwork& solved, bool deterministic,
                    std::span<const GangRequirement> gangs, SolvedRound& round);

  flow::FlowNetwork network_;
  // One-shot rounds, and deterministic rounds of an incremental solver.
  std::unique_ptr<solver::McmfSolver> solver_;
  // Null unless kIncrementalRounds.
  std::unique_ptr<IncrementalMirror> mirror_;
  // The last round's problem and solution: rounds solved from scratch
  // export into buffers already mapped; repaired rounds keep them only
  // while they race, or for problem(). And the flow per slot of rounds
  // solved from scratch (repaired rounds read the mirror's certified one).
  MirrorResult result_;
  std::vector<int64_t> flow_by_slot_;
  bool keep_problems_ = false;
  bool verify_extraction_ = false;
  // Repaired rounds' placements, kept and brought up to date from what
  // the mirror logged.
  absl::Status VerifyExtraction() const;
  flow::IncrementalPlacements tracked_;
  // The last pass's placements (see SolvePass), task node ascending.
  std::vector<flow::TaskPlacement> placements_;
};

}  // namespace flowsched::core
