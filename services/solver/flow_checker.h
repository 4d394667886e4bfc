#pragma once

// An independent certificate check for min-cost flow results. Every solution
// passes through it before the scheduler publishes placements, so it shares
// no code with any solver beyond ValidateProblem and runs in O(n + m).

#include "absl/status/status.h"
#include "services/solver/mcmf_problem.h"

namespace flowsched::solver {

// Returns OK iff `solution` is a kOptimal solution whose flow is feasible and
// whose potentials prove it optimal (LP duality: a feasible flow plus
// potentials satisfying complementary slackness is a minimum-cost flow):
//   - flow.size() == arcs.size(), potentials.size() == node_count;
//   - 0 <= flow[i] <= capacity[i];
//   - outflow(v) - inflow(v) == supply[v];
//   - with rc = cost - p[src] + p[dst]: flow < capacity => rc >= 0 and
//     flow > 0 => rc <= 0;
//   - total_cost == sum(cost * flow).
// A violated condition yields InternalError naming the first offending arc
// or node and the values involved. A problem that fails ValidateProblem
// yields that InvalidArgument status instead.
absl::Status CheckOptimalFlow(const McmfProblem& problem,
                              const McmfSolution& solution);

}  // namespace flowsched::solver
