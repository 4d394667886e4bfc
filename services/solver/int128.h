#pragma once

// A 128-bit integer for overflow-free sums of int64 products (cost * flow,
// node balances). __extension__ keeps -Wpedantic quiet about the GCC/Clang
// builtin, which ISO C++ lacks.

namespace flowsched::solver {

__extension__ typedef __int128 Int128;

}  // namespace flowsched::solver
