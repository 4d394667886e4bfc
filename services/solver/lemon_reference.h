#pragma once

// LEMON's NetworkSimplex as a correctness oracle for solver tests. Test-only:
// production code must not depend on LEMON.

#include <cstdint>

#include "services/solver/mcmf_problem.h"

namespace flowsched::solver::testgen {

struct LemonResult {
  McmfOutcome outcome = McmfOutcome::kInfeasible;
  int64_t total_cost = 0;  // valid when outcome == kOptimal
};

// Solves `problem` (which must pass ValidateProblem) with
// lemon::NetworkSimplex<ListDigraph, int64_t, int64_t>. Aborts if LEMON
// reports UNBOUNDED, which bounded capacities rule out.
LemonResult SolveWithLemon(const McmfProblem& problem);

}  // namespace flowsched::solver::testgen
