#pragma once

// Feasibility of a min-cost flow problem, independent of costs: shared by the
// solvers that need an up-front answer before optimising (cost scaling's
// push-relabel and the relaxation method both assume that every excess can
// reach a deficit).

#include <atomic>

#include "services/solver/mcmf_problem.h"

namespace flowsched::solver {

// Whether some flow 0 <= flow <= capacity meets every supply. `problem` must
// pass ValidateProblem. A multi-source, multi-sink Dinic max flow from the
// positive-supply nodes to the negative-supply ones on a private CSR copy of
// the network: O(n + m) memory, freed on return. Deterministic.
bool HasFeasibleFlow(const McmfProblem& problem);

enum class Feasibility { kFeasible, kInfeasible, kStopped };

// As above, but reads `stop` (may be null) once per Dinic phase and every
// 1,024 roots, and answers kStopped as soon as it is set: a portfolio's
// losing algorithm must not hold its race for a whole max flow at 1.5
// million arcs (tens of milliseconds) after the winner has finished.
Feasibility CheckFeasibility(const McmfProblem& problem,
                             const std::atomic<bool>* stop);

}  // namespace flowsched::solver
