#pragma once

// Goldberg's cost-scaling push-relabel min-cost flow (Goldberg 1997, "An
// efficient implementation of a scaling minimum-cost flow algorithm"; the
// algorithm Quincy used, Firmament OSDI 2016 section 4), with the two
// heuristics that make it fast in practice -- global price updates and price
// refinement -- and a warm start from a previous optimum (Firmament section
// 5.2, incremental cost scaling).

#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "services/solver/mcmf_problem.h"
#include "services/solver/mcmf_solver.h"

namespace flowsched::solver {

struct CostScalingOptions {
  // Epsilon is divided by alpha after every phase. Larger values mean fewer
  // but longer phases; Firmament found 9 good for Quincy networks, and our
  // measurements on scheduling networks favour 16
  // (docs/2026-11-27-solver-measurements.md, "CostScaling").
  int64_t alpha = 16;
  // A global price update runs after every global_update_frequency *
  // node_count relabels within a phase (and once at the start of a phase
  // that has active nodes). 0 disables global updates.
  double global_update_frequency = 0.5;
  // Try price refinement before each phase after the first (and before
  // every phase of a warm start); false disables the heuristic.
  bool price_refinement = true;
  // Cooperative cancellation for a portfolio race: when the flag becomes
  // true the solve returns Cancelled within a few thousand operations.
  const std::atomic<bool>* stop = nullptr;
};

// Exact, deterministic min-cost flow for any problem ValidateProblem accepts.
// Costs are scaled by S = node_count + 1 so that a 1-optimal flow in scaled
// units is optimal for the original integer costs; the published potentials
// are then recomputed exactly in original units (shortest paths on the
// residual network), so CheckOptimalFlow holds.
//
// Errors: InvalidArgument for invalid problems; OutOfRange when
// (node_count + 1) * max|cost| > 2^58 (scaled costs), when a scaled price
// would fall below -2^60 (checked at every price change: the prices then
// spread beyond what int64 arithmetic on them can hold, which takes
// shortest-path distances of about 2^60 / (node_count + 1) in original
// units), when one node's |supply| plus incident capacities exceeds 2^62, or
// when the optimal total cost does not fit int64. On kInfeasible the flow and
// potentials are empty. Stateless apart from the options, so one instance may
// serve concurrent calls.
class CostScaling final : public McmfSolver {
 public:
  CostScaling() = default;
  explicit CostScaling(CostScalingOptions options) : options_(options) {}

  absl::StatusOr<McmfSolution> Solve(const McmfProblem& problem) override;

  // Warm start from `flow` and `potentials`, normally the optimal solution of
  // a previous problem with the same node and arc indexing whose supplies,
  // capacities or costs have since changed. The flow is clamped into the new
  // capacities and node imbalances become excesses and deficits; the
  // potentials are kept (scaled by S), price refinement runs first, and the
  // first epsilon is the smallest power of alpha that bounds the largest
  // reduced-cost violation rather than max|cost| * S. Falls back to Solve
  // when the sizes do not match the problem, and drops the potentials (keeps
  // the flow) when their spread is too large to be useful or safe. The
  // result is exactly as optimal as Solve's (possibly a different optimum).
  absl::StatusOr<McmfSolution> SolveFrom(
      const McmfProblem& problem, const std::vector<int64_t>& flow,
      const std::vector<int64_t>& potentials);

  std::string_view name() const override { return "cost_scaling"; }

 private:
  CostScalingOptions options_;
};

}  // namespace flowsched::solver
