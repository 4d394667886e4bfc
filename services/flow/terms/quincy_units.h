#pragma once

// Quincy's cost units (SOSP 2009 section 4.2), shared by its terms: one
// cost unit is 1/1024 of the paper's unit, so psi = 1 costs 1 unit per MiB
// read across a rack switch (the paper's 1 per GB) and omega = 0.5 costs
// 512 units per second of waiting.

#include <cmath>
#include <cstdint>

namespace flowsched::flow::quincy_units {

inline constexpr double kUnitsPerPaperUnit = 1024.0;
inline constexpr double kBytesPerGb = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kMicrosPerSecond = 1e6;

// `value` rounded to whole units within [0, cap] (NaN: cap).
inline int64_t RoundToUnits(double value, int64_t cap) {
  if (!(value < static_cast<double>(cap))) return cap;
  if (value <= 0) return 0;
  return static_cast<int64_t>(std::llround(value));
}

}  // namespace flowsched::flow::quincy_units
