#include "services/solver/flow_checker.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/solver/successive_shortest_path.h"
#include "services/solver/test_graphs.h"

namespace flowsched::solver {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

// Node 0 ships 2 units to node 3 over a cheap path 0->1->3 (cost 1 + 1) or
// an expensive one 0->2->3 (cost 3 + 3).
McmfProblem Diamond() {
  McmfProblem problem;
  problem.node_count = 4;
  problem.supply = {2, 0, 0, -2};
  problem.arcs = {{.src = 0, .dst = 1, .capacity = 2, .cost = 1},
                  {.src = 1, .dst = 3, .capacity = 2, .cost = 1},
                  {.src = 0, .dst = 2, .capacity = 2, .cost = 3},
                  {.src = 2, .dst = 3, .capacity = 2, .cost = 3}};
  return problem;
}

McmfSolution DiamondOptimum() {
  McmfSolution solution;
  solution.outcome = McmfOutcome::kOptimal;
  solution.flow = {2, 2, 0, 0};
  solution.potentials = {0, -1, 0, -2};
  solution.total_cost = 4;
  solution.algorithm = "hand";
  return solution;
}

TEST(CheckOptimalFlowTest, AcceptsHandMadeOptimum) {
  EXPECT_THAT(CheckOptimalFlow(Diamond(), DiamondOptimum()), IsOk());
}

TEST(CheckOptimalFlowTest, AcceptsSolverOptimum) {
  SuccessiveShortestPath solver;
  absl::StatusOr<McmfSolution> solution = solver.Solve(Diamond());
  ASSERT_THAT(solution, IsOk());
  EXPECT_THAT(CheckOptimalFlow(Diamond(), *solution), IsOk());
}

TEST(CheckOptimalFlowTest, RejectsInfeasibleOutcome) {
  McmfSolution solution = DiamondOptimum();
  solution.outcome = McmfOutcome::kInfeasible;
  EXPECT_THAT(CheckOptimalFlow(Diamond(), solution),
              StatusIs(absl::StatusCode::kInternal, "not kOptimal"));
}

TEST(CheckOptimalFlowTest, RejectsWrongSizes) {
  McmfSolution solution = DiamondOptimum();
  solution.flow.pop_back();
  EXPECT_THAT(CheckOptimalFlow(Diamond(), solution),
              StatusIs(absl::StatusCode::kInternal, "3 flows for 4 arcs"));
  solution = DiamondOptimum();
  solution.potentials.push_back(0);
  EXPECT_THAT(
      CheckOptimalFlow(Diamond(), solution),
      StatusIs(absl::StatusCode::kInternal, "5 potentials for 4 nodes"));
}

TEST(CheckOptimalFlowTest, PassesOnInvalidProblemStatus) {
  McmfProblem problem = Diamond();
  problem.supply[0] = 3;
  EXPECT_THAT(CheckOptimalFlow(problem, DiamondOptimum()),
              StatusIs(absl::StatusCode::kInvalidArgument, "supplies sum"));
}

TEST(CheckOptimalFlowTest, RejectsFlowOverCapacity) {
  McmfSolution solution = DiamondOptimum();
  solution.flow[0] = 3;
  EXPECT_THAT(CheckOptimalFlow(Diamond(), solution),
              StatusIs(absl::StatusCode::kInternal,
                       "arc 0 (0 -> 1) has flow 3 outside [0, 2]"));
}

TEST(CheckOptimalFlowTest, RejectsNegativeFlow) {
  McmfSolution solution = DiamondOptimum();
  solution.flow[2] = -1;
  EXPECT_THAT(CheckOptimalFlow(Diamond(), solution),
              StatusIs(absl::StatusCode::kInternal,
                       "arc 2 (0 -> 2) has flow -1 outside [0, 2]"));
}

TEST(CheckOptimalFlowTest, RejectsBrokenConservation) {
  // Arc 1 has reduced cost 0, so slackness still holds and only
  // conservation at node 1 (and 3) breaks.
  McmfSolution solution = DiamondOptimum();
  solution.flow[1] = 1;
  solution.total_cost = 3;
  EXPECT_THAT(CheckOptimalFlow(Diamond(), solution),
              StatusIs(absl::StatusCode::kInternal,
                       "flow conservation fails at node 1: outflow - inflow "
                       "= -1 but supply is 0"));
}

TEST(CheckOptimalFlowTest, RejectsPotentialBreakingSlackness) {
  McmfSolution solution = DiamondOptimum();
  solution.potentials[2] = 5;  // arc 2->3 gets reduced cost 3 - 5 - 2 = -4
  EXPECT_THAT(CheckOptimalFlow(Diamond(), solution),
              StatusIs(absl::StatusCode::kInternal,
                       "complementary slackness fails on arc 3 (2 -> 3): "
                       "flow 0 < capacity 2 but reduced cost -4 < 0"));
  solution = DiamondOptimum();
  solution.potentials[1] = 0;  // arc 0->1 carries flow at reduced cost +1
  EXPECT_THAT(CheckOptimalFlow(Diamond(), solution),
              StatusIs(absl::StatusCode::kInternal,
                       "complementary slackness fails on arc 0 (0 -> 1): "
                       "flow 2 > 0 but reduced cost 1 > 0"));
}

TEST(CheckOptimalFlowTest, RejectsSuboptimalFlowUnderAnyPotentials) {
  McmfSolution solution = DiamondOptimum();
  solution.flow = {0, 0, 2, 2};  // feasible but costs 12 instead of 4
  solution.total_cost = 12;
  const std::vector<std::vector<int64_t>> candidates = {
      {0, -1, 0, -2}, {0, 0, -3, -6}, {0, -1, -3, -6},
      {0, 0, 0, 0},   {6, 5, 3, 0},   {0, -5, -3, -6}};
  for (const std::vector<int64_t>& potentials : candidates) {
    solution.potentials = potentials;
    EXPECT_THAT(
        CheckOptimalFlow(Diamond(), solution),
        StatusIs(absl::StatusCode::kInternal, "complementary slackness fails"));
  }
}

TEST(CheckOptimalFlowTest, RejectsUnusedNegativeCycle) {
  // Zero flow is feasible, but the cycle 0->1->2->0 has cost -3.
  McmfProblem problem;
  problem.node_count = 3;
  problem.supply = {0, 0, 0};
  problem.arcs = {{.src = 0, .dst = 1, .capacity = 1, .cost = -1},
                  {.src = 1, .dst = 2, .capacity = 1, .cost = -1},
                  {.src = 2, .dst = 0, .capacity = 1, .cost = -1}};
  McmfSolution solution;
  solution.outcome = McmfOutcome::kOptimal;
  solution.flow = {0, 0, 0};
  for (const std::vector<int64_t>& potentials :
       std::vector<std::vector<int64_t>>{{0, 0, 0}, {0, -1, -2}, {2, 1, 0}}) {
    solution.potentials = potentials;
    EXPECT_THAT(
        CheckOptimalFlow(problem, solution),
        StatusIs(absl::StatusCode::kInternal, "complementary slackness fails"));
  }
  SuccessiveShortestPath solver;
  absl::StatusOr<McmfSolution> optimum = solver.Solve(problem);
  ASSERT_THAT(optimum, IsOk());
  EXPECT_EQ(optimum->total_cost, -3);
  EXPECT_THAT(CheckOptimalFlow(problem, *optimum), IsOk());
}

TEST(CheckOptimalFlowTest, RejectsWrongTotalCost) {
  McmfSolution solution = DiamondOptimum();
  solution.total_cost = 5;
  EXPECT_THAT(CheckOptimalFlow(Diamond(), solution),
              StatusIs(absl::StatusCode::kInternal,
                       "total_cost is 5 but the flow costs 4"));
}

TEST(CheckOptimalFlowTest, RejectsExtremePotentialsWithoutOverflow) {
  McmfSolution solution = DiamondOptimum();
  solution.potentials = {INT64_MIN, INT64_MAX, INT64_MIN, INT64_MAX};
  EXPECT_THAT(CheckOptimalFlow(Diamond(), solution),
              StatusIs(absl::StatusCode::kInternal,
                       "complementary slackness fails on arc 0"));
}

TEST(CheckOptimalFlowTest, RejectsEveryOneArcPerturbationOfRandomOptima) {
  SuccessiveShortestPath solver;
  int perturbed = 0;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    SCOPED_TRACE(seed);
    const McmfProblem problem = testgen::RandomFeasibleNetwork(
        seed, {.node_count = 15, .arc_count = 50});
    absl::StatusOr<McmfSolution> solution = solver.Solve(problem);
    ASSERT_THAT(solution, IsOk());
    ASSERT_THAT(CheckOptimalFlow(problem, *solution), IsOk());
    for (size_t i = 0; i < problem.arcs.size(); ++i) {
      const McmfArc& arc = problem.arcs[i];
      // On a self-loop a unit more flow conserves flow and may be optimal.
      if (arc.src == arc.dst) continue;
      McmfSolution broken = *solution;
      broken.flow[i] += broken.flow[i] < arc.capacity ? 1 : -1;
      if (arc.capacity == 0) broken.flow[i] = 1;
      EXPECT_THAT(CheckOptimalFlow(problem, broken),
                  StatusIs(absl::StatusCode::kInternal, ""));
      ++perturbed;
    }
  }
  EXPECT_GT(perturbed, 1000);
}

// The int64 pass overflows on potentials near INT64_MIN (cost - p[src]
// passes 2^63); the 128-bit pass then decides, exactly as without it.
TEST(CheckOptimalFlowTest, OverflowingShiftedPotentialsAreCheckedExactly) {
  SuccessiveShortestPath solver;
  int overflowing = 0;  // arcs whose int64 reduced cost overflows
  for (uint64_t seed = 0; seed < 20; ++seed) {
    SCOPED_TRACE(seed);
    const McmfProblem problem = testgen::RandomFeasibleNetwork(
        seed, {.node_count = 15, .arc_count = 50});
    absl::StatusOr<McmfSolution> solution = solver.Solve(problem);
    ASSERT_THAT(solution, IsOk());
    // Shifted so that the lowest price is INT64_MIN: cost - p[src]
    // overflows on every arc out of that node with cost >= 0.
    McmfSolution shifted = *solution;
    const int64_t low =
        *std::min_element(shifted.potentials.begin(), shifted.potentials.end());
    const int64_t high =
        *std::max_element(shifted.potentials.begin(), shifted.potentials.end());
    ASSERT_LT(high - low, int64_t{1} << 40);
    for (int64_t& p : shifted.potentials) p = INT64_MIN + (p - low);
    for (const McmfArc& arc : problem.arcs) {
      overflowing += shifted.potentials[arc.src] == INT64_MIN && arc.cost >= 0;
    }
    EXPECT_THAT(CheckOptimalFlow(problem, shifted), IsOk());
    // One node's price off by one breaks slackness on some arc (or not,
    // if its arcs have slack): both verdicts must match the exact rule.
    for (size_t v = 0; v < shifted.potentials.size(); ++v) {
      McmfSolution moved = shifted;
      moved.potentials[v] += 1;
      McmfSolution unshifted = *solution;
      unshifted.potentials[v] += 1;
      EXPECT_EQ(CheckOptimalFlow(problem, moved).ok(),
                CheckOptimalFlow(problem, unshifted).ok())
          << "node " << v;
    }
  }
  EXPECT_GT(overflowing, 0);
}

}  // namespace
}  // namespace flowsched::solver
