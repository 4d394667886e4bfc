#include "services/solver/successive_shortest_path.h"

#include <cstdint>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/solver/flow_checker.h"
#include "services/solver/lemon_reference.h"
#include "services/solver/test_graphs.h"

namespace flowsched::solver {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Solves with SSP, checks the certificate, and compares outcome and cost
// with LEMON. Returns our outcome so callers can count cases.
McmfOutcome SolveAndCompare(const McmfProblem& problem) {
  SuccessiveShortestPath solver;
  absl::StatusOr<McmfSolution> solution = solver.Solve(problem);
  EXPECT_THAT(solution, IsOk());
  if (!solution.ok()) return McmfOutcome::kInfeasible;
  const testgen::LemonResult lemon = testgen::SolveWithLemon(problem);
  EXPECT_EQ(solution->outcome, lemon.outcome);
  EXPECT_EQ(solution->algorithm, "ssp");
  if (solution->outcome == McmfOutcome::kOptimal) {
    EXPECT_THAT(CheckOptimalFlow(problem, *solution), IsOk());
    if (lemon.outcome == McmfOutcome::kOptimal) {
      EXPECT_EQ(solution->total_cost, lemon.total_cost);
    }
  } else {
    EXPECT_THAT(solution->flow, IsEmpty());
    EXPECT_THAT(solution->potentials, IsEmpty());
  }
  return solution->outcome;
}

McmfSolution SolveOrDie(const McmfProblem& problem) {
  SuccessiveShortestPath solver;
  absl::StatusOr<McmfSolution> solution = solver.Solve(problem);
  EXPECT_THAT(solution, IsOk());
  EXPECT_THAT(CheckOptimalFlow(problem, *solution), IsOk());
  return *solution;
}

TEST(SuccessiveShortestPathTest, Name) {
  EXPECT_EQ(SuccessiveShortestPath().name(), "ssp");
}

TEST(SuccessiveShortestPathTest, EmptyNetwork) {
  const McmfSolution solution = SolveOrDie(McmfProblem{});
  EXPECT_EQ(solution.outcome, McmfOutcome::kOptimal);
  EXPECT_THAT(solution.flow, IsEmpty());
  EXPECT_THAT(solution.potentials, IsEmpty());
  EXPECT_EQ(solution.total_cost, 0);
  EXPECT_EQ(solution.algorithm, "ssp");
}

TEST(SuccessiveShortestPathTest, ZeroSupplyNodesOnly) {
  McmfProblem problem;
  problem.node_count = 3;
  problem.supply = {0, 0, 0};
  problem.arcs = {{.src = 0, .dst = 1, .capacity = 4, .cost = 2},
                  {.src = 1, .dst = 2, .capacity = 4, .cost = 0}};
  const McmfSolution solution = SolveOrDie(problem);
  EXPECT_EQ(solution.outcome, McmfOutcome::kOptimal);
  EXPECT_THAT(solution.flow, ElementsAre(0, 0));
  EXPECT_EQ(solution.total_cost, 0);
  SolveAndCompare(problem);

  problem.arcs.clear();
  EXPECT_EQ(SolveOrDie(problem).potentials.size(), 3u);
}

TEST(SuccessiveShortestPathTest, SingleArc) {
  McmfProblem problem;
  problem.node_count = 2;
  problem.supply = {3, -3};
  problem.arcs = {{.src = 0, .dst = 1, .capacity = 5, .cost = 7}};
  const McmfSolution solution = SolveOrDie(problem);
  EXPECT_EQ(solution.outcome, McmfOutcome::kOptimal);
  EXPECT_THAT(solution.flow, ElementsAre(3));
  EXPECT_EQ(solution.total_cost, 21);
}

TEST(SuccessiveShortestPathTest, SingleArcTooSmallIsInfeasible) {
  McmfProblem problem;
  problem.node_count = 2;
  problem.supply = {3, -3};
  problem.arcs = {{.src = 0, .dst = 1, .capacity = 2, .cost = 7}};
  EXPECT_EQ(SolveAndCompare(problem), McmfOutcome::kInfeasible);
}

TEST(SuccessiveShortestPathTest, SupplyWithoutArcsIsInfeasible) {
  McmfProblem problem;
  problem.node_count = 2;
  problem.supply = {1, -1};
  EXPECT_EQ(SolveAndCompare(problem), McmfOutcome::kInfeasible);
}

TEST(SuccessiveShortestPathTest, ParallelArcsFillCheapestFirst) {
  McmfProblem problem;
  problem.node_count = 2;
  problem.supply = {5, -5};
  problem.arcs = {{.src = 0, .dst = 1, .capacity = 3, .cost = 4},
                  {.src = 0, .dst = 1, .capacity = 3, .cost = 1},
                  {.src = 0, .dst = 1, .capacity = 0, .cost = -9},
                  {.src = 0, .dst = 1, .capacity = 3, .cost = 2}};
  const McmfSolution solution = SolveOrDie(problem);
  EXPECT_THAT(solution.flow, ElementsAre(0, 3, 0, 2));
  EXPECT_EQ(solution.total_cost, 7);
}

TEST(SuccessiveShortestPathTest, SelfLoops) {
  McmfProblem problem;
  problem.node_count = 2;
  problem.supply = {1, -1};
  problem.arcs = {{.src = 0, .dst = 0, .capacity = 4, .cost = 3},
                  {.src = 0, .dst = 0, .capacity = 4, .cost = -3},
                  {.src = 0, .dst = 1, .capacity = 1, .cost = 1},
                  {.src = 1, .dst = 1, .capacity = 2, .cost = 0}};
  const McmfSolution solution = SolveOrDie(problem);
  EXPECT_EQ(solution.flow[0], 0);
  EXPECT_EQ(solution.flow[1], 4);  // a negative loop is worth saturating
  EXPECT_EQ(solution.flow[2], 1);
  EXPECT_EQ(solution.total_cost, -11);
  SolveAndCompare(problem);
}

TEST(SuccessiveShortestPathTest, NegativeCostsAndCycles) {
  // A negative cycle 1->2->3->1 next to a path whose cheapest route uses a
  // negative arc.
  McmfProblem problem;
  problem.node_count = 5;
  problem.supply = {2, 0, 0, 0, -2};
  problem.arcs = {{.src = 1, .dst = 2, .capacity = 2, .cost = -5},
                  {.src = 2, .dst = 3, .capacity = 1, .cost = 1},
                  {.src = 3, .dst = 1, .capacity = 3, .cost = 1},
                  {.src = 0, .dst = 1, .capacity = 2, .cost = 2},
                  {.src = 2, .dst = 4, .capacity = 2, .cost = 2},
                  {.src = 0, .dst = 4, .capacity = 2, .cost = 1}};
  SolveAndCompare(problem);
}

TEST(SuccessiveShortestPathTest, RejectsInvalidProblem) {
  McmfProblem problem;
  problem.node_count = 1;
  problem.supply = {1};
  SuccessiveShortestPath solver;
  EXPECT_THAT(solver.Solve(problem),
              StatusIs(absl::StatusCode::kInvalidArgument, "supplies sum"));
}

TEST(SuccessiveShortestPathTest, ReportsTotalCostOverflow) {
  McmfProblem problem;
  problem.node_count = 1;
  problem.supply = {0};
  problem.arcs = {{.src = 0, .dst = 0, .capacity = kMaxArcCapacity,
                   .cost = -kMaxArcCost}};
  SuccessiveShortestPath solver;
  EXPECT_THAT(solver.Solve(problem),
              StatusIs(absl::StatusCode::kOutOfRange, "total cost"));
}

TEST(SuccessiveShortestPathTest, LargeButRepresentableNumbers) {
  McmfProblem problem;
  problem.node_count = 3;
  // Every bound at its limit where the total cost still fits in int64.
  problem.supply = {kMaxArcCapacity, 0, -kMaxArcCapacity};
  problem.arcs = {
      {.src = 0, .dst = 1, .capacity = kMaxArcCapacity, .cost = 1000},
      {.src = 1, .dst = 2, .capacity = int64_t{1} << 30, .cost = -kMaxArcCost},
      {.src = 1, .dst = 2, .capacity = kMaxArcCapacity, .cost = 5},
      {.src = 0, .dst = 2, .capacity = kMaxArcCapacity, .cost = 2000}};
  SolveAndCompare(problem);
}

TEST(SuccessiveShortestPathTest, Deterministic) {
  const McmfProblem problem = testgen::SchedulingNetwork(
      7, {.task_count = 300, .job_count = 7, .machine_count = 40});
  const McmfSolution first = SolveOrDie(problem);
  const McmfSolution second = SolveOrDie(problem);
  EXPECT_EQ(first.flow, second.flow);
  EXPECT_EQ(first.potentials, second.potentials);
  EXPECT_EQ(first.total_cost, second.total_cost);
}

TEST(SuccessiveShortestPathTest, MatchesLemonOnRandomFeasibleNetworks) {
  int optimal = 0;
  for (uint64_t seed = 0; seed < 240; ++seed) {
    SCOPED_TRACE(seed);
    testgen::RandomNetworkOptions options;
    options.node_count = static_cast<uint32_t>(1 + seed % 60);
    options.arc_count = options.node_count * static_cast<uint32_t>(1 + seed % 7);
    options.max_capacity = seed % 3 == 0 ? 1 : 1000;
    options.min_cost = seed % 2 == 0 ? -100 : 0;
    options.max_cost = 100;
    options.zero_capacity_fraction = 0.1;
    options.parallel_arc_fraction = 0.2;
    options.self_loop_fraction = 0.05;
    if (seed % 40 == 0) {  // a few larger ones
      options.node_count = 2000;
      options.arc_count = 10000;
    }
    if (SolveAndCompare(testgen::RandomFeasibleNetwork(seed, options)) ==
        McmfOutcome::kOptimal) {
      ++optimal;
    }
  }
  EXPECT_EQ(optimal, 240);
}

TEST(SuccessiveShortestPathTest, MatchesLemonFeasibilityOnRandomSupplies) {
  int infeasible = 0;
  int optimal = 0;
  for (uint64_t seed = 0; seed < 240; ++seed) {
    SCOPED_TRACE(seed);
    testgen::RandomNetworkOptions options;
    options.node_count = static_cast<uint32_t>(2 + seed % 40);
    options.arc_count = options.node_count * static_cast<uint32_t>(2 + seed % 4);
    options.max_capacity = 10;
    options.min_cost = -20;
    options.max_cost = 50;
    const McmfOutcome outcome =
        SolveAndCompare(testgen::RandomSupplyNetwork(seed, options, 4));
    ++(outcome == McmfOutcome::kOptimal ? optimal : infeasible);
  }
  // Both outcomes must be exercised for the cross-check to mean anything.
  EXPECT_GT(infeasible, 40);
  EXPECT_GT(optimal, 40);
}

TEST(SuccessiveShortestPathTest, MatchesLemonOnSchedulingNetworks) {
  for (uint64_t seed = 0; seed < 220; ++seed) {
    SCOPED_TRACE(seed);
    testgen::SchedulingOptions options;
    options.task_count = static_cast<uint32_t>(10 + (seed * 37) % 600);
    options.job_count = static_cast<uint32_t>(1 + seed % 12);
    options.machine_count = static_cast<uint32_t>(2 + seed % 50);
    options.rack_count = static_cast<uint32_t>(1 + seed % 6);
    options.utilisation = 0.5 + 0.7 * static_cast<double>(seed % 15) / 14.0;
    options.max_preferences = static_cast<uint32_t>(seed % 6);
    EXPECT_EQ(SolveAndCompare(testgen::SchedulingNetwork(seed, options)),
              McmfOutcome::kOptimal);
  }
}

TEST(SuccessiveShortestPathTest, MatchesLemonOnCappedSchedulingNetworks) {
  // Capping the unscheduled aggregators makes overloaded clusters
  // infeasible; both solvers must agree on which.
  int infeasible = 0;
  int optimal = 0;
  for (uint64_t seed = 0; seed < 120; ++seed) {
    SCOPED_TRACE(seed);
    testgen::SchedulingOptions options;
    options.task_count = static_cast<uint32_t>(20 + (seed * 53) % 400);
    options.job_count = static_cast<uint32_t>(1 + seed % 9);
    options.machine_count = static_cast<uint32_t>(3 + seed % 30);
    options.rack_count = static_cast<uint32_t>(1 + seed % 4);
    options.utilisation = 0.8 + 0.8 * static_cast<double>(seed % 9) / 8.0;
    options.max_preferences = 3;
    options.unscheduled_fraction = 0.25;
    const McmfOutcome outcome =
        SolveAndCompare(testgen::SchedulingNetwork(seed, options));
    ++(outcome == McmfOutcome::kOptimal ? optimal : infeasible);
  }
  EXPECT_GT(infeasible, 20);
  EXPECT_GT(optimal, 20);
}

TEST(SuccessiveShortestPathTest, MatchesLemonOnLargeSchedulingNetwork) {
  SolveAndCompare(testgen::SchedulingNetwork(
      1, {.task_count = 5000,
          .job_count = 200,
          .machine_count = 1500,
          .rack_count = 40,
          .utilisation = 0.95,
          .max_preferences = 6}));
}

}  // namespace
}  // namespace flowsched::solver
