#pragma once

// The property tests every one-shot min-cost flow algorithm must pass,
// written once: seeded families of random, supply-random, scheduling-shaped
// and capped scheduling networks, each result checked by CheckOptimalFlow
// and compared with LEMON NetworkSimplex (outcome and optimal cost; an
// infeasible result carries no flow). Test-only (gtest assertions).
//
// `solve(problem, seed)` lets an algorithm vary its tuning options with the
// seed, since correctness must not depend on them.

#include <cstdint>
#include <functional>
#include <string_view>

#include "absl/status/statusor.h"
#include "services/solver/mcmf_problem.h"

namespace flowsched::solver::testgen {

using SolveFn = std::function<absl::StatusOr<McmfSolution>(
    const McmfProblem& problem, uint64_t seed)>;

// Checks one result; returns its outcome (kInfeasible on error).
McmfOutcome ExpectMatchesLemon(const McmfProblem& problem,
                               const absl::StatusOr<McmfSolution>& solution);

// 240 feasible networks (negative costs, parallel arcs, zero capacities,
// self-loops, some of 2,000 nodes): all optimal and equal to LEMON.
void ExpectMatchesLemonOnRandomFeasibleNetworks(const SolveFn& solve);
// 240 networks with random supplies: outcome agrees with LEMON, both
// outcomes well represented.
void ExpectMatchesLemonFeasibilityOnRandomSupplies(const SolveFn& solve);
// 220 scheduling-shaped networks at 50% to 120% slot utilisation.
void ExpectMatchesLemonOnSchedulingNetworks(const SolveFn& solve);
// 120 scheduling networks with capped unscheduled arcs, often infeasible.
void ExpectMatchesLemonOnCappedSchedulingNetworks(const SolveFn& solve);
// One network of 5,000 tasks on 1,500 machines at 95%.
void ExpectMatchesLemonOnLargeSchedulingNetwork(const SolveFn& solve);
// 24 chains of 200-2,000 nodes (ChainNetwork), half with back arcs, so
// negative cycles: paths of hundreds to 1,600 arcs, unlike any scheduling
// network.
void ExpectMatchesLemonOnChains(const SolveFn& solve);
// `MakeSolver(name)` builds an algorithm that reports `name`, and
// SolverNames() lists it.
void ExpectRegistered(std::string_view name);
// Two solves of one scheduling network give the same flow and potentials.
void ExpectDeterministic(const SolveFn& solve);
// The errors every algorithm gives the same way: supplies that do not sum
// to zero (InvalidArgument) and a negative self-loop whose saturation
// costs more than int64 holds (OutOfRange; `overflow_message` is part of
// the message).
void ExpectRejectsUnbalancedAndOverflowing(const SolveFn& solve,
                                           std::string_view overflow_message);
// Hand-made corner cases with known answers: the empty network, zero
// supplies, parallel arcs filled cheapest first, self-loops (a negative
// one is saturated), and a negative cycle off the supply path.
void ExpectCornerCasesSolved(const SolveFn& solve);

}  // namespace flowsched::solver::testgen
