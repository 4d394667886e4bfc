#pragma once

// Test-only: the check every IncrementalSolver test round passes (export,
// certificate, LEMON's outcome and cost, per-handle flow), and the option
// variants the property tests cycle through.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/solver/flow_checker.h"
#include "services/solver/incremental_solver.h"
#include "services/solver/lemon_reference.h"
#include "services/solver/problem_validator.h"

namespace flowsched::solver::testgen {

// Solves, exports, checks the certificate and compares outcome and cost
// with LEMON solving the exported problem from scratch. `stats`, if given,
// receives the solve's counters.
inline McmfOutcome SolveAndCheck(IncrementalSolver& solver,
                                 IncrementalStats* stats = nullptr) {
  absl::StatusOr<IncrementalResult> result = solver.Solve();
  EXPECT_THAT(result, ::flowsched::testing::IsOk());
  if (!result.ok()) return McmfOutcome::kInfeasible;
  if (stats != nullptr) *stats = result->stats;
  McmfProblem problem;
  McmfSolution solution;
  std::vector<uint32_t> handles;
  solver.Export(problem, solution, handles);
  EXPECT_THAT(ValidateProblem(problem), ::flowsched::testing::IsOk());
  testgen::LemonResult lemon{.outcome = McmfOutcome::kOptimal};
  // LEMON calls a network without nodes infeasible.
  if (problem.node_count > 0) lemon = testgen::SolveWithLemon(problem);
  EXPECT_EQ(result->outcome, lemon.outcome);
  EXPECT_EQ(solution.outcome, result->outcome);
  if (result->outcome == McmfOutcome::kOptimal) {
    EXPECT_THAT(CheckOptimalFlow(problem, solution),
                ::flowsched::testing::IsOk());
    EXPECT_EQ(result->total_cost, solution.total_cost);
    if (lemon.outcome == McmfOutcome::kOptimal) {
      EXPECT_EQ(result->total_cost, lemon.total_cost);
    }
    for (size_t i = 0; i < handles.size(); ++i) {
      EXPECT_EQ(solver.flow(handles[i]), solution.flow[i]);
    }
  }
  return result->outcome;
}

inline IncrementalOptions OptionsVariant(int variant) {
  IncrementalOptions options;
  if (variant & 1) {
    options.dijkstra_stop = IncrementalOptions::DijkstraStop::kFirstDeficit;
  }
  if (variant & 2) options.drain_arc_budget = 0;
  if (variant & 4) {
    options.search_side = IncrementalOptions::SearchSide::kForward;
  }
  if (variant & 8) options.rebalance_leaves = false;
  if (variant & 16) options.two_sided_search = false;
  if (variant & 32) options.pair_through_sink = false;
  return options;
}

}  // namespace flowsched::solver::testgen
