#include "services/solver/solver_registry.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "services/solver/successive_shortest_path.h"

namespace flowsched::solver {

absl::StatusOr<std::unique_ptr<McmfSolver>> MakeSolver(std::string_view name) {
  if (name == "ssp") return std::make_unique<SuccessiveShortestPath>();
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown solver algorithm '", std::string(name), "'; known: ssp"));
}

}  // namespace flowsched::solver
