#include "services/solver/flow_checker.h"

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "services/common/status_macros.h"
#include "services/solver/int128.h"
#include "services/solver/problem_validator.h"

namespace flowsched::solver {
namespace {

// fmt 9 cannot format Int128 portably; the values printed here are sums
// that usually fit int64, and saturating keeps the message readable if not.
std::string SaturatingInt128ToString(Int128 value) {
  if (value > std::numeric_limits<int64_t>::max()) return "> 2^63";
  if (value < std::numeric_limits<int64_t>::min()) return "< -2^63";
  return std::to_string(static_cast<int64_t>(value));
}

// The checks of CheckOptimalFlow in int64 arithmetic, every operation
// overflow-checked: true iff all of them hold and none overflowed. A
// scheduling network's values stay far from 2^63, so this pass decides
// almost every round, at about half the cost of the 128-bit pass; anything
// else (a failure, an overflow) goes to that pass, which names the cause.
// REQUIRES: ValidateProblem(problem) is OK, flow.size() == arcs.size(),
// potentials.size() == node_count.
bool OptimalInInt64(const McmfProblem& problem, const McmfSolution& solution) {
  std::vector<int64_t> balance(problem.node_count, 0);
  const std::vector<int64_t>& potentials = solution.potentials;
  int64_t total_cost = 0;
  bool overflow = false;
  for (size_t i = 0; i < problem.arcs.size(); ++i) {
    const McmfArc& arc = problem.arcs[i];
    const int64_t flow = solution.flow[i];
    if (flow < 0 || flow > arc.capacity) return false;
    int64_t cost_of_flow = 0;
    int64_t reduced_cost = 0;
    overflow |=
        __builtin_add_overflow(balance[arc.src], flow, &balance[arc.src]);
    overflow |=
        __builtin_sub_overflow(balance[arc.dst], flow, &balance[arc.dst]);
    overflow |= __builtin_mul_overflow(flow, arc.cost, &cost_of_flow);
    overflow |= __builtin_add_overflow(total_cost, cost_of_flow, &total_cost);
    overflow |=
        __builtin_sub_overflow(arc.cost, potentials[arc.src], &reduced_cost);
    overflow |= __builtin_add_overflow(reduced_cost, potentials[arc.dst],
                                       &reduced_cost);
    if ((flow < arc.capacity && reduced_cost < 0) ||
        (flow > 0 && reduced_cost > 0)) {
      return false;
    }
  }
  if (overflow || total_cost != solution.total_cost) return false;
  for (uint32_t v = 0; v < problem.node_count; ++v) {
    if (balance[v] != problem.supply[v]) return false;
  }
  return true;
}

}  // namespace

absl::Status CheckOptimalFlow(const McmfProblem& problem,
                              const McmfSolution& solution) {
  FLOWSCHED_RETURN_IF_ERROR(ValidateProblem(problem));
  if (solution.outcome != McmfOutcome::kOptimal) {
    return absl::InternalError("solution outcome is not kOptimal");
  }
  if (solution.flow.size() != problem.arcs.size()) {
    return absl::InternalError(fmt::format("solution has {} flows for {} arcs",
                                           solution.flow.size(),
                                           problem.arcs.size()));
  }
  if (solution.potentials.size() != problem.node_count) {
    return absl::InternalError(
        fmt::format("solution has {} potentials for {} nodes",
                    solution.potentials.size(), problem.node_count));
  }

  if (OptimalInInt64(problem, solution)) return absl::OkStatus();
  // All arithmetic is Int128: flows, potentials and total cost come from
  // the code under suspicion and may hold any int64 value.
  std::vector<Int128> balance(problem.node_count, 0);
  Int128 total_cost = 0;
  for (size_t i = 0; i < problem.arcs.size(); ++i) {
    const McmfArc& arc = problem.arcs[i];
    const int64_t flow = solution.flow[i];
    if (flow < 0 || flow > arc.capacity) {
      return absl::InternalError(
          fmt::format("arc {} ({} -> {}) has flow {} outside [0, {}]", i,
                      arc.src, arc.dst, flow, arc.capacity));
    }
    balance[arc.src] += flow;
    balance[arc.dst] -= flow;
    total_cost += static_cast<Int128>(flow) * arc.cost;

    const Int128 reduced_cost = static_cast<Int128>(arc.cost) -
                                solution.potentials[arc.src] +
                                solution.potentials[arc.dst];
    if (flow < arc.capacity && reduced_cost < 0) {
      return absl::InternalError(fmt::format(
          "complementary slackness fails on arc {} ({} -> {}): flow {} < "
          "capacity {} but reduced cost {} < 0",
          i, arc.src, arc.dst, flow, arc.capacity,
          SaturatingInt128ToString(reduced_cost)));
    }
    if (flow > 0 && reduced_cost > 0) {
      return absl::InternalError(fmt::format(
          "complementary slackness fails on arc {} ({} -> {}): flow {} > 0 "
          "but reduced cost {} > 0",
          i, arc.src, arc.dst, flow, SaturatingInt128ToString(reduced_cost)));
    }
  }
  for (uint32_t v = 0; v < problem.node_count; ++v) {
    if (balance[v] != problem.supply[v]) {
      return absl::InternalError(fmt::format(
          "flow conservation fails at node {}: outflow - inflow = {} but "
          "supply is {}",
          v, SaturatingInt128ToString(balance[v]), problem.supply[v]));
    }
  }
  if (total_cost != solution.total_cost) {
    return absl::InternalError(
        fmt::format("total_cost is {} but the flow costs {}",
                    solution.total_cost, SaturatingInt128ToString(total_cost)));
  }
  return absl::OkStatus();
}

}  // namespace flowsched::solver
