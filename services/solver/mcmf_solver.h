#pragma once

// The one interface every min-cost flow algorithm in flowsched implements, so
// the solver worker can swap or race algorithms without knowing which ran.

#include <string_view>

#include "absl/status/statusor.h"
#include "services/solver/mcmf_problem.h"

namespace flowsched::solver {

class McmfSolver {
 public:
  virtual ~McmfSolver() = default;

  // Returns an OK status with outcome kOptimal (flow, potentials and
  // total_cost filled in) or kInfeasible (no feasible flow exists). A non-OK
  // status means the problem itself was rejected (InvalidArgument), its
  // numbers cannot be represented (OutOfRange), a stop flag ended the solve
  // (Cancelled), or a time budget did (DeadlineExceeded: relaxation); it
  // never means "infeasible".
  virtual absl::StatusOr<McmfSolution> Solve(const McmfProblem& problem) = 0;

  // Short stable name, also written to McmfSolution::algorithm.
  virtual std::string_view name() const = 0;
};

}  // namespace flowsched::solver
