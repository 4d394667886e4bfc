#pragma once

// A 128-bit integer for overflow-free sums of int64 products (cost * flow,
// node balances). __extension__ keeps -Wpedantic quiet about the GCC/Clang
// builtin, which ISO C++ lacks.

#include <algorithm>
#include <string>

namespace flowsched::solver {

__extension__ typedef __int128 Int128;

// Decimal digits of `value` (no standard stream prints __int128), for
// error messages.
inline std::string Int128ToString(Int128 value) {
  if (value == 0) return "0";
  const bool negative = value < 0;
  std::string digits;
  while (value != 0) {
    const int digit = static_cast<int>(value % 10);
    digits.push_back(static_cast<char>('0' + (negative ? -digit : digit)));
    value /= 10;
  }
  if (negative) digits.push_back('-');
  std::reverse(digits.begin(), digits.end());
  return digits;
}

}  // namespace flowsched::solver
