#include "services/solver/solution_cost.h"

namespace flowsched::solver {

absl::StatusOr<int64_t> CheckedTotalCost(Int128 total_cost) {
  if (total_cost > std::numeric_limits<int64_t>::max() ||
      total_cost < std::numeric_limits<int64_t>::min()) {
    return absl::OutOfRangeError("optimal total cost does not fit in int64");
  }
  return static_cast<int64_t>(total_cost);
}

}  // namespace flowsched::solver
