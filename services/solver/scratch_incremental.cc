#include "services/solver/scratch_incremental.h"

#include <atomic>
#include <cstdint>
#include <string>

#include "services/common/status_macros.h"
#include "services/solver/problem_validator.h"

namespace flowsched::solver {

absl::StatusOr<McmfSolution> ScratchIncremental::Solve(
    const McmfProblem& problem) {
  FLOWSCHED_RETURN_IF_ERROR(ValidateProblem(problem));
  if (stop_ != nullptr && stop_->load(std::memory_order_relaxed)) {
    return absl::CancelledError("incremental solve stopped by its caller");
  }
  IncrementalSolver solver(options_);
  solver.set_stop_flag(stop_);
  FLOWSCHED_RETURN_IF_ERROR(solver.Load(problem));
  FLOWSCHED_ASSIGN_OR_RETURN(const IncrementalResult result, solver.Solve());
  McmfSolution solution;
  solution.algorithm = std::string(name());
  solution.outcome = result.outcome;
  if (result.outcome != McmfOutcome::kOptimal) return solution;
  solution.total_cost = result.total_cost;
  solution.flow.resize(problem.arcs.size());
  for (uint32_t a = 0; a < problem.arcs.size(); ++a) {
    solution.flow[a] = solver.flow(a);
  }
  solution.potentials.resize(problem.node_count);
  for (uint32_t v = 0; v < problem.node_count; ++v) {
    solution.potentials[v] = solver.potential(v);
  }
  return solution;
}

}  // namespace flowsched::solver
