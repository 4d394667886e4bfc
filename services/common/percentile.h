#pragma once

// The one percentile every report uses (status, simulate, bench solver,
// bench e2e, the profiles): nearest rank. The p-th percentile of n values
// is the smallest value with at least p*n values at or below it, so it is
// always a measured value, and p99 of fewer than 100 values is the maximum.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

namespace flowsched {

// REQUIRES: `sorted` ascending and not empty; p in [0, 1] (clamped).
inline double NearestRankPercentile(std::span<const double> sorted, double p) {
  const double n = static_cast<double>(sorted.size());
  const auto rank = static_cast<size_t>(std::ceil(std::clamp(p, 0.0, 1.0) * n));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

// The same on unsorted values (sorted here); NaN when there are none.
inline double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  return NearestRankPercentile(values, p);
}

}  // namespace flowsched
