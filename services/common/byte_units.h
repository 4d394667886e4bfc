#pragma once

// Byte sizes, for memory requests and capacities written in tests and
// traces.

#include <cstdint>

namespace flowsched {

inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

}  // namespace flowsched
