#pragma once

// LEMON NetworkSimplex and CostScaling as benchmark peers. Kept in their
// own translation unit because LEMON 1.3's CostScaling (through
// StaticDigraph's ArrayMap) calls std::allocator::construct, which C++20
// removed; lemon_runners.cc is compiled as C++17 (see CMakeLists.txt), so
// this header must stay C++17.

#include <cstdint>

#include "services/solver/mcmf_problem.h"

namespace flowsched::bench {

enum class LemonAlgorithm { kNetworkSimplex, kCostScaling };

struct LemonRun {
  double total_ms = 0;  // SmartDigraph build + maps + run()
  double run_ms = 0;    // run() only
  bool optimal = false;
  bool unbounded = false;  // impossible with finite capacities
  int64_t cost = 0;
};

// REQUIRES: `problem` passes ValidateProblem.
LemonRun SolveWithLemon(const solver::McmfProblem& problem,
                        LemonAlgorithm algorithm);

}  // namespace flowsched::bench
