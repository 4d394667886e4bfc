#pragma once

// Creates a min-cost flow algorithm by the name configuration uses.

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "services/solver/mcmf_solver.h"

namespace flowsched::solver {

// Known: "ssp" (successive shortest path), "cost_scaling" (Goldberg). InvalidArgument lists the known
// names for anything else.
absl::StatusOr<std::unique_ptr<McmfSolver>> MakeSolver(std::string_view name);

}  // namespace flowsched::solver
