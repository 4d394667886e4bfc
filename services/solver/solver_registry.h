#pragma once

// The min-cost flow algorithms by the names configuration uses.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "services/solver/mcmf_solver.h"

namespace flowsched::solver {

// Every algorithm MakeSolver knows, fastest general-purpose one first:
// "cost_scaling" (Goldberg), "ssp" (successive shortest path).
std::vector<std::string> SolverNames();

// The one-shot default: cost scaling is robust under contention and
// oversubscription (Firmament section 4), where SSP collapses.
inline constexpr std::string_view kDefaultSolver = "cost_scaling";

// InvalidArgument listing SolverNames() for an unknown name.
absl::StatusOr<std::unique_ptr<McmfSolver>> MakeSolver(std::string_view name);

}  // namespace flowsched::solver
