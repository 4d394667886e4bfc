#pragma once

// Feasibility of a min-cost flow problem, independent of costs: shared by the
// solvers that need an up-front answer before optimising (cost scaling's
// push-relabel and the relaxation method both assume that every excess can
// reach a deficit).

#include "services/solver/mcmf_problem.h"

namespace flowsched::solver {

// Whether some flow 0 <= flow <= capacity meets every supply. `problem` must
// pass ValidateProblem. A multi-source, multi-sink Dinic max flow from the
// positive-supply nodes to the negative-supply ones on a private CSR copy of
// the network: O(n + m) memory, freed on return. Deterministic.
bool HasFeasibleFlow(const McmfProblem& problem);

}  // namespace flowsched::solver
