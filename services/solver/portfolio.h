#pragma once

// Firmament's solver portfolio (OSDI 2016, section 6.1): relaxation is the
// fastest algorithm on scheduling networks in the common case but
// collapses under contention and oversubscription, where cost scaling
// stays robust; predicting which one wins depends on policy and load, so
// both run at once, one per core, and the first to finish stops the other.
// The solution names the winner in `algorithm`.
//
// Not deterministic in which optimum it returns (the winner depends on
// timing): deterministic rounds use a single algorithm instead.

#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "services/solver/mcmf_solver.h"

namespace flowsched::solver {

class Portfolio final : public McmfSolver {
 public:
  // `race_stop`, if given, is shared with the caller's own racers: any of
  // them setting it stops this portfolio (Cancelled), and the portfolio sets
  // it when one of its algorithms finishes first.
  explicit Portfolio(std::atomic<bool>* race_stop = nullptr)
      : race_stop_(race_stop) {}

  absl::StatusOr<McmfSolution> Solve(const McmfProblem& problem) override;
  std::string_view name() const override { return "portfolio"; }

  // Firmament's incremental portfolio: both algorithms start from a
  // previous optimum of a network with the same node and arc indexing
  // (relaxation from its prices and flow, Relaxation::SolveFrom; cost
  // scaling with price refinement, CostScaling::SolveFrom), so whichever
  // algorithm won the last round, the other resumes from its solution.
  // The result is as exact as Solve's.
  absl::StatusOr<McmfSolution> SolveFrom(const McmfProblem& problem,
                                         const std::vector<int64_t>& flow,
                                         const std::vector<int64_t>& potentials);

 private:
  struct WarmStart {
    const std::vector<int64_t>& flow;
    const std::vector<int64_t>& potentials;
  };
  absl::StatusOr<McmfSolution> Race(const McmfProblem& problem,
                                    const WarmStart* warm);

  std::atomic<bool>* race_stop_;
};

}  // namespace flowsched::solver
