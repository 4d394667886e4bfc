#include "services/solver/solver_conformance.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/solver/flow_checker.h"
#include "services/solver/lemon_reference.h"
#include "services/solver/solver_registry.h"
#include "services/solver/test_graphs.h"
#include "tests/common/sanitizer_scale.h"

namespace flowsched::solver::testgen {

using ::flowsched::testing::CasesToRun;

McmfOutcome ExpectMatchesLemon(const McmfProblem& problem,
                               const absl::StatusOr<McmfSolution>& solution) {
  EXPECT_THAT(solution, flowsched::testing::IsOk());
  if (!solution.ok()) return McmfOutcome::kInfeasible;
  const LemonResult lemon = SolveWithLemon(problem);
  EXPECT_EQ(solution->outcome, lemon.outcome);
  if (solution->outcome == McmfOutcome::kOptimal) {
    EXPECT_THAT(CheckOptimalFlow(problem, *solution),
                flowsched::testing::IsOk());
    if (lemon.outcome == McmfOutcome::kOptimal) {
      EXPECT_EQ(solution->total_cost, lemon.total_cost);
    }
  } else {
    EXPECT_THAT(solution->flow, ::testing::IsEmpty());
    EXPECT_THAT(solution->potentials, ::testing::IsEmpty());
  }
  return solution->outcome;
}

void ExpectMatchesLemonOnRandomFeasibleNetworks(const SolveFn& solve) {
  uint64_t optimal = 0;
  for (uint64_t seed = 0; seed < CasesToRun(240); ++seed) {
    SCOPED_TRACE(seed);
    RandomNetworkOptions options;
    options.node_count = static_cast<uint32_t>(1 + seed % 60);
    options.arc_count =
        options.node_count * static_cast<uint32_t>(1 + seed % 7);
    options.max_capacity = seed % 3 == 0 ? 1 : 1000;
    options.min_cost = seed % 2 == 0 ? -100 : 0;
    options.max_cost = seed % 5 == 0 ? 100000 : 100;
    options.zero_capacity_fraction = 0.1;
    options.parallel_arc_fraction = 0.2;
    options.self_loop_fraction = 0.05;
    if (seed % 40 == 0) {
      options.node_count = 2000;
      options.arc_count = 10000;
    }
    const McmfProblem problem = RandomFeasibleNetwork(seed, options);
    if (ExpectMatchesLemon(problem, solve(problem, seed)) ==
        McmfOutcome::kOptimal) {
      ++optimal;
    }
  }
  EXPECT_EQ(optimal, CasesToRun(240));
}

void ExpectMatchesLemonFeasibilityOnRandomSupplies(const SolveFn& solve) {
  uint64_t infeasible = 0;
  uint64_t optimal = 0;
  for (uint64_t seed = 0; seed < CasesToRun(240); ++seed) {
    SCOPED_TRACE(seed);
    RandomNetworkOptions options;
    options.node_count = static_cast<uint32_t>(2 + seed % 40);
    options.arc_count =
        options.node_count * static_cast<uint32_t>(2 + seed % 4);
    options.max_capacity = 10;
    options.min_cost = -20;
    options.max_cost = 50;
    const McmfProblem problem = RandomSupplyNetwork(seed, options, 4);
    const McmfOutcome outcome =
        ExpectMatchesLemon(problem, solve(problem, seed));
    ++(outcome == McmfOutcome::kOptimal ? optimal : infeasible);
  }
  // Both outcomes are common: more than a sixth of the cases each.
  EXPECT_GT(infeasible, CasesToRun(240) / 6);
  EXPECT_GT(optimal, CasesToRun(240) / 6);
}

void ExpectMatchesLemonOnSchedulingNetworks(const SolveFn& solve) {
  for (uint64_t seed = 0; seed < CasesToRun(220); ++seed) {
    SCOPED_TRACE(seed);
    SchedulingOptions options;
    options.task_count = static_cast<uint32_t>(10 + (seed * 37) % 600);
    options.job_count = static_cast<uint32_t>(1 + seed % 12);
    options.machine_count = static_cast<uint32_t>(2 + seed % 50);
    options.rack_count = static_cast<uint32_t>(1 + seed % 6);
    options.utilisation = 0.5 + 0.7 * static_cast<double>(seed % 15) / 14.0;
    options.max_preferences = static_cast<uint32_t>(seed % 6);
    const McmfProblem problem = SchedulingNetwork(seed, options);
    EXPECT_EQ(ExpectMatchesLemon(problem, solve(problem, seed)),
              McmfOutcome::kOptimal);
  }
}

void ExpectMatchesLemonOnCappedSchedulingNetworks(const SolveFn& solve) {
  uint64_t infeasible = 0;
  uint64_t optimal = 0;
  for (uint64_t seed = 0; seed < CasesToRun(120); ++seed) {
    SCOPED_TRACE(seed);
    SchedulingOptions options;
    options.task_count = static_cast<uint32_t>(20 + (seed * 53) % 400);
    options.job_count = static_cast<uint32_t>(1 + seed % 9);
    options.machine_count = static_cast<uint32_t>(3 + seed % 30);
    options.rack_count = static_cast<uint32_t>(1 + seed % 4);
    options.utilisation = 0.8 + 0.8 * static_cast<double>(seed % 9) / 8.0;
    options.max_preferences = 3;
    options.unscheduled_fraction = 0.25;
    const McmfProblem problem = SchedulingNetwork(seed, options);
    const McmfOutcome outcome =
        ExpectMatchesLemon(problem, solve(problem, seed));
    ++(outcome == McmfOutcome::kOptimal ? optimal : infeasible);
  }
  // Both outcomes are common: more than a sixth of the cases each.
  EXPECT_GT(infeasible, CasesToRun(120) / 6);
  EXPECT_GT(optimal, CasesToRun(120) / 6);
}

void ExpectMatchesLemonOnLargeSchedulingNetwork(const SolveFn& solve) {
  const McmfProblem problem = SchedulingNetwork(1, {.task_count = 5000,
                                                    .job_count = 200,
                                                    .machine_count = 1500,
                                                    .rack_count = 40,
                                                    .utilisation = 0.95,
                                                    .max_preferences = 6});
  EXPECT_EQ(ExpectMatchesLemon(problem, solve(problem, 1)),
            McmfOutcome::kOptimal);
}

void ExpectMatchesLemonOnChains(const SolveFn& solve) {
  for (uint64_t seed = 0; seed < CasesToRun(24); ++seed) {
    SCOPED_TRACE(::testing::Message() << "chain seed " << seed);
    const auto nodes = static_cast<uint32_t>(200 + 1800 * (seed % 4) / 3);
    const McmfProblem problem = ChainNetwork(
        seed, {.node_count = nodes,
               .shortcuts = nodes / 2,
               .max_hop = 10 + static_cast<uint32_t>(seed % 5) * 20,
               .endpoints = 1 + static_cast<uint32_t>(seed % 6),
               .back_arcs = seed % 2 == 1});
    EXPECT_EQ(ExpectMatchesLemon(problem, solve(problem, seed)),
              McmfOutcome::kOptimal);
  }
}

void ExpectRegistered(std::string_view name) {
  absl::StatusOr<std::unique_ptr<McmfSolver>> solver = MakeSolver(name);
  ASSERT_THAT(solver, flowsched::testing::IsOk());
  EXPECT_EQ((*solver)->name(), name);
  EXPECT_THAT(SolverNames(), ::testing::Contains(std::string(name)));
}

void ExpectDeterministic(const SolveFn& solve) {
  const McmfProblem problem = SchedulingNetwork(
      7, {.task_count = 300, .job_count = 7, .machine_count = 40});
  absl::StatusOr<McmfSolution> first = solve(problem, 0);
  absl::StatusOr<McmfSolution> second = solve(problem, 0);
  ASSERT_THAT(first, flowsched::testing::IsOk());
  ASSERT_THAT(second, flowsched::testing::IsOk());
  EXPECT_EQ(first->flow, second->flow);
  EXPECT_EQ(first->potentials, second->potentials);
}

void ExpectRejectsUnbalancedAndOverflowing(const SolveFn& solve,
                                           std::string_view overflow_message) {
  McmfProblem unbalanced;
  unbalanced.node_count = 1;
  unbalanced.supply = {1};
  EXPECT_THAT(solve(unbalanced, 0),
              flowsched::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                           "supplies sum"));
  McmfProblem overflow;
  overflow.node_count = 1;
  overflow.supply = {0};
  overflow.arcs = {
      {.src = 0, .dst = 0, .capacity = kMaxArcCapacity, .cost = -kMaxArcCost}};
  EXPECT_THAT(solve(overflow, 0),
              flowsched::testing::StatusIs(absl::StatusCode::kOutOfRange,
                                           std::string(overflow_message)));
}

void ExpectCornerCasesSolved(const SolveFn& solve) {
  auto empty = solve(McmfProblem{}, 0);
  ASSERT_THAT(empty, flowsched::testing::IsOk());
  EXPECT_EQ(empty->outcome, McmfOutcome::kOptimal);
  EXPECT_THAT(empty->flow, ::testing::IsEmpty());

  McmfProblem idle;
  idle.node_count = 3;
  idle.supply = {0, 0, 0};
  idle.arcs = {{.src = 0, .dst = 1, .capacity = 4, .cost = 2},
               {.src = 1, .dst = 2, .capacity = 4, .cost = 0}};
  auto idle_solution = solve(idle, 1);
  ExpectMatchesLemon(idle, idle_solution);
  if (idle_solution.ok()) {
    EXPECT_THAT(idle_solution->flow, ::testing::ElementsAre(0, 0));
  }

  McmfProblem parallel;
  parallel.node_count = 2;
  parallel.supply = {5, -5};
  parallel.arcs = {{.src = 0, .dst = 1, .capacity = 3, .cost = 4},
                   {.src = 0, .dst = 1, .capacity = 3, .cost = 1},
                   {.src = 0, .dst = 1, .capacity = 0, .cost = -9},
                   {.src = 0, .dst = 1, .capacity = 3, .cost = 2}};
  auto parallel_solution = solve(parallel, 2);
  ExpectMatchesLemon(parallel, parallel_solution);
  if (parallel_solution.ok()) {
    EXPECT_THAT(parallel_solution->flow, ::testing::ElementsAre(0, 3, 0, 2));
  }

  McmfProblem loops;
  loops.node_count = 2;
  loops.supply = {1, -1};
  loops.arcs = {{.src = 0, .dst = 0, .capacity = 4, .cost = 3},
                {.src = 0, .dst = 0, .capacity = 4, .cost = -3},
                {.src = 0, .dst = 1, .capacity = 1, .cost = 1},
                {.src = 1, .dst = 1, .capacity = 2, .cost = 0}};
  auto loops_solution = solve(loops, 3);
  ExpectMatchesLemon(loops, loops_solution);
  if (loops_solution.ok()) {
    EXPECT_EQ(loops_solution->total_cost, -11);
  }

  McmfProblem cycle;
  cycle.node_count = 5;
  cycle.supply = {2, 0, 0, 0, -2};
  cycle.arcs = {{.src = 1, .dst = 2, .capacity = 2, .cost = -5},
                {.src = 2, .dst = 3, .capacity = 1, .cost = 1},
                {.src = 3, .dst = 1, .capacity = 3, .cost = 1},
                {.src = 0, .dst = 1, .capacity = 2, .cost = 2},
                {.src = 2, .dst = 4, .capacity = 2, .cost = 2},
                {.src = 0, .dst = 4, .capacity = 2, .cost = 1}};
  EXPECT_EQ(ExpectMatchesLemon(cycle, solve(cycle, 4)), McmfOutcome::kOptimal);
}

}  // namespace flowsched::solver::testgen
