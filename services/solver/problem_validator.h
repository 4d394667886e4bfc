#pragma once

#include <string_view>
#include <vector>

// Structural checks every solver runs before touching a problem, so that the
// algorithms themselves may assume in-range indices and bounded numbers.

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "services/solver/mcmf_problem.h"

namespace flowsched::solver {

// Solvers index residual arcs (two per input arc) with uint32_t, so 2 *
// kMaxArcCount must stay below 2^32.
inline constexpr size_t kMaxArcCount = (size_t{1} << 31) - 1;

// Largest |supply| of one node; equal to the arc capacity bound so a node's
// supply can always be carried by a single arc.
inline constexpr int64_t kMaxNodeSupply = kMaxArcCapacity;

// Returns OK, or InvalidArgument naming the first offending node or arc index
// and its value. Checks: supply.size() == node_count, arcs.size() <=
// kMaxArcCount, arc endpoints < node_count, 0 <= capacity <= kMaxArcCapacity,
// |cost| <= kMaxArcCost, |supply| <= kMaxNodeSupply, and supplies summing to 0.
absl::Status ValidateProblem(const McmfProblem& problem);

// The per-arc part of ValidateProblem for arc `index` of a problem with
// `node_count` nodes: endpoints, capacity and cost bounds.
absl::Status ValidateArc(const McmfArc& arc, size_t index, uint32_t node_count);

// Whether ValidateArc accepts `arc`, as a branch that loops over millions of
// arcs inline (ValidateArc then names what is wrong with one that fails).
[[nodiscard]] inline bool ArcWithinBounds(const McmfArc& arc,
                                          uint32_t node_count) {
  return arc.src < node_count && arc.dst < node_count && arc.capacity >= 0 &&
         arc.capacity <= kMaxArcCapacity && arc.cost <= kMaxArcCost &&
         arc.cost >= -kMaxArcCost;
}

// The first arc of `arcs` that ValidateArc rejects, as its InvalidArgument;
// OK if none. O(arcs) with one inline test per arc.
absl::Status ValidateArcs(const std::vector<McmfArc>& arcs,
                          uint32_t node_count);

// Push-based algorithms keep a per-node excess that can reach |supply| plus
// the capacity of every incident arc; OutOfRange (naming `algorithm` and
// the node) when that exceeds 2^62, so it always fits int64.
absl::Status CheckNodeThroughput(const McmfProblem& problem,
                                 std::string_view algorithm);

}  // namespace flowsched::solver
