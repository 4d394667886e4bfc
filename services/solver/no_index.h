#pragma once

// The "no node / no arc" sentinel of the solvers' uint32_t index arrays
// (parents, predecessors, bucket links, BFS levels).

#include <cstdint>
#include <limits>

namespace flowsched::solver {

inline constexpr uint32_t kNoIndex = std::numeric_limits<uint32_t>::max();

}  // namespace flowsched::solver
