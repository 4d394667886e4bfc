#pragma once

// Solves one round on a replica of the graph manager's network: the solver
// worker's and the simulator's common step. Mirror the changes, solve
// (repairing the previous optimal flow, or from scratch), check the result
// (feasible and optimal: guarantee 6) while extracting placements, and turn
// the placements into decisions. Nothing unchecked leaves Solve.
//
// Thread-safety: none; Solve uses two threads internally (CheckAndExtract).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/core/decision.h"
#include "services/core/incremental_mirror.h"
#include "services/flow/flow_network.h"
#include "services/flow/graph_change.h"
#include "services/flow/placement_extractor.h"
#include "services/solver/mcmf_solver.h"

namespace flowsched::core {

// The name that selects IncrementalMirror (repair each round, cold starts by
// the default portfolio) rather than one from-scratch algorithm.
inline constexpr std::string_view kIncrementalRounds = "incremental";

struct SolvedRound {
  // Not OK: the solver failed, the network is infeasible or the checker
  // refused the flow; nothing else below is meaningful then.
  absl::Status verdict;
  // The incremental state may be inconsistent after a failed repair: the
  // replica must be rebuilt from a snapshot (Reset, then apply one).
  bool replica_lost = false;
  std::vector<flow::TaskPlacement> placements;
  std::vector<Decision> decisions;  // placements that differ from now
  int64_t total_cost = 0;
  std::string algorithm;  // the algorithm whose flow was checked
  double solve_ms = 0;
  double check_ms = 0;          // the checker, including its input's export
  double extract_ms = 0;        // the extraction, including the flow per slot
  double check_extract_ms = 0;  // both, side by side (what the round paid)
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
  SolvedRound Solve(bool deterministic);

  [[nodiscard]] const flow::FlowNetwork& network() const { return network_; }
  // The problem and solution the last Solve checked (for DIMACS export);
  // complete once Solve returned.
  [[nodiscard]] const solver::McmfProblem& problem() const {
    return result_.problem;
  }
  // kIncrementalRounds or the one-shot algorithm's name.
  [[nodiscard]] std::string_view name() const;

 private:
  RoundSolver() = default;

  flow::FlowNetwork network_;
  // One-shot rounds, and deterministic rounds of an incremental solver.
  std::unique_ptr<solver::McmfSolver> solver_;
  // Null unless kIncrementalRounds.
  std::unique_ptr<IncrementalMirror> mirror_;
  // The last round's problem, solution and flow per slot: the next round
  // exports into buffers already mapped.
  MirrorResult result_;
  std::vector<int64_t> flow_by_slot_;
};

}  // namespace flowsched::core
