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
#include <string_view>

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

 private:
  std::atomic<bool>* race_stop_;
};

}  // namespace flowsched::solver
