#pragma once

// The input and output of every min-cost flow algorithm in flowsched: a
// dense, index-based network that the flow layer exports once per round.
// No protobuf and no ids from the cluster appear here.

#include <cstdint>
#include <string>
#include <vector>

namespace flowsched::solver {

// Largest |cost| and capacity an arc may carry. Potentials stay bounded by
// node_count * kMaxArcCost. The total cost can still overflow int64 in
// theory (2^40 units at cost 2^30); solvers detect that and return
// OutOfRange rather than a wrong answer.
inline constexpr int64_t kMaxArcCost = int64_t{1} << 30;
inline constexpr int64_t kMaxArcCapacity = int64_t{1} << 40;

struct McmfArc {
  uint32_t src = 0;
  uint32_t dst = 0;
  int64_t capacity = 0;  // lower bound is always 0
  int64_t cost = 0;
};

// Minimise sum(cost * flow) subject to 0 <= flow <= capacity and, for every
// node v, outflow(v) - inflow(v) == supply[v]. Supplies must sum to zero.
struct McmfProblem {
  uint32_t node_count = 0;
  std::vector<int64_t> supply;  // size node_count
  std::vector<McmfArc> arcs;
};

enum class McmfOutcome { kOptimal, kInfeasible };

struct McmfSolution {
  McmfOutcome outcome = McmfOutcome::kInfeasible;
  std::vector<int64_t> flow;        // per arc, same order as problem.arcs
  std::vector<int64_t> potentials;  // per node; reduced cost c - p[u] + p[v]
  int64_t total_cost = 0;
  std::string algorithm;
};

}  // namespace flowsched::solver
