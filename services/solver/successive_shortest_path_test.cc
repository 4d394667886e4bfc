#include "services/solver/successive_shortest_path.h"

#include <cstdint>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/solver/flow_checker.h"
#include "services/solver/lemon_reference.h"
#include "services/solver/solver_conformance.h"
#include "services/solver/test_graphs.h"

namespace flowsched::solver {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Solves with SSP, checks the certificate, and compares outcome and cost
// with LEMON. Returns our outcome so callers can count cases.
McmfOutcome SspSolveAndCompare(const McmfProblem& problem) {
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
  SspSolveAndCompare(problem);

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
  EXPECT_EQ(SspSolveAndCompare(problem), McmfOutcome::kInfeasible);
}

TEST(SuccessiveShortestPathTest, SupplyWithoutArcsIsInfeasible) {
  McmfProblem problem;
  problem.node_count = 2;
  problem.supply = {1, -1};
  EXPECT_EQ(SspSolveAndCompare(problem), McmfOutcome::kInfeasible);
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
  SspSolveAndCompare(problem);
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
  SspSolveAndCompare(problem);
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
  problem.arcs = {
      {.src = 0, .dst = 0, .capacity = kMaxArcCapacity, .cost = -kMaxArcCost}};
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
  SspSolveAndCompare(problem);
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

// The shared property tests (solver_conformance.h).
const testgen::SolveFn kSspSolve = [](const McmfProblem& problem,
                                      uint64_t /*seed*/) {
  return SuccessiveShortestPath().Solve(problem);
};

TEST(SuccessiveShortestPathTest, CornerCases) {
  testgen::ExpectCornerCasesSolved(kSspSolve);
}

TEST(SuccessiveShortestPathTest, MatchesLemonOnRandomFeasibleNetworks) {
  testgen::ExpectMatchesLemonOnRandomFeasibleNetworks(kSspSolve);
}

TEST(SuccessiveShortestPathTest, MatchesLemonFeasibilityOnRandomSupplies) {
  testgen::ExpectMatchesLemonFeasibilityOnRandomSupplies(kSspSolve);
}

TEST(SuccessiveShortestPathTest, MatchesLemonOnSchedulingNetworks) {
  testgen::ExpectMatchesLemonOnSchedulingNetworks(kSspSolve);
}

TEST(SuccessiveShortestPathTest, MatchesLemonOnCappedSchedulingNetworks) {
  testgen::ExpectMatchesLemonOnCappedSchedulingNetworks(kSspSolve);
}

TEST(SuccessiveShortestPathTest, MatchesLemonOnLargeSchedulingNetwork) {
  testgen::ExpectMatchesLemonOnLargeSchedulingNetwork(kSspSolve);
}

TEST(SuccessiveShortestPathTest, MatchesLemonOnChains) {
  testgen::ExpectMatchesLemonOnChains(kSspSolve);
}

}  // namespace
}  // namespace flowsched::solver
