#include "services/solver/problem_validator.h"

#include <fmt/format.h>

#include "services/common/status_macros.h"
#include "services/solver/int128.h"

namespace flowsched::solver {

absl::Status ValidateProblem(const McmfProblem& problem) {
  if (problem.supply.size() != problem.node_count) {
    return absl::InvalidArgumentError(
        fmt::format("supply has {} entries but node_count is {}",
                    problem.supply.size(), problem.node_count));
  }
  if (problem.arcs.size() > kMaxArcCount) {
    return absl::InvalidArgumentError(fmt::format(
        "{} arcs exceed the limit of {}", problem.arcs.size(), kMaxArcCount));
  }
  // |supply| <= 2^40 and node_count < 2^32 keep the running sum below 2^72,
  // which only a 128-bit integer holds.
  Int128 supply_sum = 0;
  for (uint32_t v = 0; v < problem.node_count; ++v) {
    const int64_t supply = problem.supply[v];
    if (supply > kMaxNodeSupply || supply < -kMaxNodeSupply) {
      return absl::InvalidArgumentError(
          fmt::format("node {} has supply {} outside [-{}, {}]", v, supply,
                      kMaxNodeSupply, kMaxNodeSupply));
    }
    supply_sum += supply;
  }
  if (supply_sum != 0) {
    return absl::InvalidArgumentError(fmt::format(
        "supplies sum to {} instead of 0", static_cast<long long>(supply_sum)));
  }
  return ValidateArcs(problem.arcs, problem.node_count);
}

absl::Status ValidateArcs(const std::vector<McmfArc>& arcs,
                          uint32_t node_count) {
  for (size_t i = 0; i < arcs.size(); ++i) {
    if (!ArcWithinBounds(arcs[i], node_count)) [[unlikely]] {
      return ValidateArc(arcs[i], i, node_count);
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateArc(const McmfArc& arc, size_t index,
                         uint32_t node_count) {
  if (arc.src >= node_count) {
    return absl::InvalidArgumentError(fmt::format(
        "arc {} has src {} but node_count is {}", index, arc.src, node_count));
  }
  if (arc.dst >= node_count) {
    return absl::InvalidArgumentError(fmt::format(
        "arc {} has dst {} but node_count is {}", index, arc.dst, node_count));
  }
  if (arc.capacity < 0 || arc.capacity > kMaxArcCapacity) {
    return absl::InvalidArgumentError(
        fmt::format("arc {} has capacity {} outside [0, {}]", index,
                    arc.capacity, kMaxArcCapacity));
  }
  if (arc.cost > kMaxArcCost || arc.cost < -kMaxArcCost) {
    return absl::InvalidArgumentError(
        fmt::format("arc {} has cost {} outside [-{}, {}]", index, arc.cost,
                    kMaxArcCost, kMaxArcCost));
  }
  return absl::OkStatus();
}

absl::Status CheckNodeThroughput(const McmfProblem& problem,
                                 std::string_view algorithm) {
  constexpr Int128 kMaxNodeThroughput = Int128{1} << 62;
  std::vector<Int128> throughput(problem.node_count, 0);
  for (uint32_t v = 0; v < problem.node_count; ++v) {
    throughput[v] = problem.supply[v] < 0 ? -Int128{problem.supply[v]}
                                          : Int128{problem.supply[v]};
  }
  for (const McmfArc& arc : problem.arcs) {
    throughput[arc.src] += arc.capacity;
    throughput[arc.dst] += arc.capacity;
  }
  for (uint32_t v = 0; v < problem.node_count; ++v) {
    if (throughput[v] > kMaxNodeThroughput) {
      return absl::OutOfRangeError(fmt::format(
          "{}: node {} has |supply| plus incident capacity above 2^62; its "
          "excess could overflow int64",
          algorithm, v));
    }
  }
  return absl::OkStatus();
}

}  // namespace flowsched::solver
