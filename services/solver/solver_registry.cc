#include "services/solver/solver_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/solver/cost_scaling.h"
#include "services/solver/portfolio.h"
#include "services/solver/relaxation.h"
#include "services/solver/scratch_incremental.h"
#include "services/solver/successive_shortest_path.h"

namespace flowsched::solver {

std::vector<std::string> SolverNames() {
  return {"portfolio", "cost_scaling", "relaxation", "incremental", "ssp"};
}

absl::StatusOr<std::unique_ptr<McmfSolver>> MakeSolver(std::string_view name) {
  if (name == "ssp") return std::make_unique<SuccessiveShortestPath>();
  if (name == "cost_scaling") return std::make_unique<CostScaling>();
  if (name == "relaxation") return std::make_unique<Relaxation>();
  if (name == "portfolio") return std::make_unique<Portfolio>();
  if (name == "incremental") return std::make_unique<ScratchIncremental>();
  return absl::InvalidArgumentError(
      absl::StrCat("unknown solver algorithm '", std::string(name),
                   "'; known: ", absl::StrJoin(SolverNames(), ", ")));
}

}  // namespace flowsched::solver
