#pragma once

// The min-cost flow algorithms by the names configuration uses.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "services/solver/mcmf_solver.h"

namespace flowsched::solver {

// Every algorithm MakeSolver knows: "portfolio" (cost scaling raced
// against relaxation or the primal-dual, first wins), "cost_scaling"
// (Goldberg), "relaxation" (RELAX-IV), "incremental" (the incremental
// solver's primal-dual from zero flow, ScratchIncremental), "ssp"
// (successive shortest path).
std::vector<std::string> SolverNames();

// The one-shot default: the portfolio, since neither relaxation (fast in
// the common case, collapses under contention) nor cost scaling (robust,
// slower in the common case) wins everywhere (Firmament section 6.1).
inline constexpr std::string_view kDefaultSolver = "portfolio";
// A single deterministic algorithm, for deterministic rounds.
inline constexpr std::string_view kDeterministicSolver = "cost_scaling";

// InvalidArgument listing SolverNames() for an unknown name.
absl::StatusOr<std::unique_ptr<McmfSolver>> MakeSolver(std::string_view name);

}  // namespace flowsched::solver
