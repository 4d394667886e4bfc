#pragma once

// Primal-dual successive shortest path: Dijkstra on reduced costs finds the
// next shortest augmenting distance, then a blocking-flow DFS pushes as much
// flow as possible along every path of that length before the next Dijkstra.

#include <string_view>

#include "absl/status/statusor.h"
#include "services/solver/mcmf_problem.h"
#include "services/solver/mcmf_solver.h"

namespace flowsched::solver {

// Exact, deterministic min-cost flow for any problem ValidateProblem accepts
// (negative costs, parallel arcs, self-loops and zero capacities included).
// Returns InvalidArgument for invalid problems and OutOfRange when node_count
// * max|cost| or the optimal total cost does not fit the int64 arithmetic.
// On kInfeasible the flow and potentials of the solution are empty.
// Stateless (all work arrays live inside Solve), so one instance may serve
// concurrent Solve calls.
class SuccessiveShortestPath final : public McmfSolver {
 public:
  absl::StatusOr<McmfSolution> Solve(const McmfProblem& problem) override;
  std::string_view name() const override { return "ssp"; }
};

}  // namespace flowsched::solver
