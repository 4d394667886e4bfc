#pragma once

// Turns the per-arc flow a solver found into the McmfSolution every solver
// returns: flow by arc and the total cost, summed in 128 bits so that a
// network of 64-bit costs cannot overflow silently. Shared by the
// from-scratch solvers (relaxation, cost scaling, successive shortest path),
// which differ only in how they store residual capacities.

#include <cstddef>
#include <cstdint>
#include <limits>

#include "absl/status/statusor.h"
#include "services/solver/int128.h"
#include "services/solver/mcmf_problem.h"

namespace flowsched::solver {

// OutOfRange if the total cost does not fit in int64.
absl::StatusOr<int64_t> CheckedTotalCost(Int128 total_cost);

// An optimal solution of `problem` whose flow on arc i is
// problem.arcs[i].capacity - residual(i); potentials are left to the caller.
template <typename ResidualOf>
absl::StatusOr<McmfSolution> SolutionFromResiduals(const McmfProblem& problem,
                                                   ResidualOf residual) {
  McmfSolution solution;
  solution.outcome = McmfOutcome::kOptimal;
  solution.flow.resize(problem.arcs.size());
  Int128 total_cost = 0;
  for (size_t i = 0; i < problem.arcs.size(); ++i) {
    const McmfArc& arc = problem.arcs[i];
    const int64_t flow = arc.capacity - residual(i);
    solution.flow[i] = flow;
    total_cost += static_cast<Int128>(flow) * arc.cost;
  }
  auto total = CheckedTotalCost(total_cost);
  if (!total.ok()) return total.status();
  solution.total_cost = *total;
  return solution;
}

}  // namespace flowsched::solver
