#include "services/solver/scratch_incremental.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/solver/flow_checker.h"
#include "services/solver/lemon_reference.h"
#include "services/solver/solver_conformance.h"
#include "services/solver/test_graphs.h"
#include "tests/common/sanitizer_scale.h"

namespace flowsched::solver {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;
using ::testing::IsEmpty;

// Correctness must not depend on the repair's tuning knobs.
IncrementalOptions ScratchOptionsForSeed(uint64_t seed) {
  IncrementalOptions options;
  if (seed % 5 == 1) {
    options.dijkstra_stop = IncrementalOptions::DijkstraStop::kFirstDeficit;
  }
  if (seed % 3 == 1)
    options.search_side = IncrementalOptions::SearchSide::kForward;
  options.drain_arc_budget = seed % 4 == 2 ? 0 : 256;
  options.rebalance_leaves = seed % 7 != 3;
  options.two_sided_search = seed % 2 == 0;
  options.pair_through_sink = seed / 2 % 2 == 0;
  return options;
}

const testgen::SolveFn kScratchIncrementalSolve = [](const McmfProblem& problem,
                                                     uint64_t seed) {
  return ScratchIncremental(ScratchOptionsForSeed(seed)).Solve(problem);
};

TEST(ScratchIncrementalTest, NameAndRegistry) {
  EXPECT_EQ(ScratchIncremental().name(), "incremental");
  testgen::ExpectRegistered("incremental");
}

TEST(ScratchIncrementalTest, InfeasibleCarriesNoFlow) {
  McmfProblem problem;
  problem.node_count = 2;
  problem.supply = {3, -3};
  problem.arcs = {{.src = 0, .dst = 1, .capacity = 2, .cost = 7}};
  absl::StatusOr<McmfSolution> solution = ScratchIncremental().Solve(problem);
  ASSERT_THAT(solution, IsOk());
  EXPECT_EQ(solution->outcome, McmfOutcome::kInfeasible);
  EXPECT_THAT(solution->flow, IsEmpty());
  EXPECT_THAT(solution->potentials, IsEmpty());
  EXPECT_EQ(solution->algorithm, "incremental");
}

TEST(ScratchIncrementalTest, Errors) {
  testgen::ExpectRejectsUnbalancedAndOverflowing(kScratchIncrementalSolve,
                                                 "total cost");
}

TEST(ScratchIncrementalTest, Deterministic) {
  testgen::ExpectDeterministic(kScratchIncrementalSolve);
}

// Load is SetSupply and SetArc in index order with each list laid out at
// once: the same problem loaded either way has the same optimal cost, and
// both flows pass the certificate (the lists' order may differ, so which
// optimum the searches settle on may too).
TEST(ScratchIncrementalTest, LoadIsTheSameAsElementwiseChanges) {
  for (const double utilisation : {0.7, 1.1}) {
    const McmfProblem problem =
        testgen::SchedulingNetwork(11, {.task_count = 400,
                                        .job_count = 9,
                                        .machine_count = 50,
                                        .utilisation = utilisation});
    IncrementalSolver loaded;
    ASSERT_THAT(loaded.Load(problem), IsOk());
    IncrementalSolver stepwise;
    for (uint32_t v = 0; v < problem.node_count; ++v) {
      ASSERT_THAT(stepwise.SetSupply(v, problem.supply[v]), IsOk());
    }
    for (uint32_t a = 0; a < problem.arcs.size(); ++a) {
      const McmfArc& arc = problem.arcs[a];
      ASSERT_THAT(stepwise.SetArc(a, arc.src, arc.dst, arc.capacity, arc.cost),
                  IsOk());
    }
    for (IncrementalSolver* solver : {&loaded, &stepwise}) {
      absl::StatusOr<IncrementalResult> result = solver->Solve();
      ASSERT_THAT(result, IsOk());
      ASSERT_EQ(result->outcome, McmfOutcome::kOptimal);
      EXPECT_EQ(result->total_cost,
                testgen::SolveWithLemon(problem).total_cost);
      McmfProblem exported;
      McmfSolution solution;
      std::vector<uint32_t> handles;
      solver->Export(exported, solution, handles);
      EXPECT_EQ(exported.arcs.size(), problem.arcs.size());
      EXPECT_THAT(CheckOptimalFlow(exported, solution), IsOk());
    }
    // Only into an empty solver.
    EXPECT_THAT(
        loaded.Load(problem),
        StatusIs(absl::StatusCode::kFailedPrecondition, "empty solver"));
  }
}

TEST(ScratchIncrementalTest, LoadRejectsArcsToMissingNodes) {
  McmfProblem problem;
  problem.node_count = 2;
  problem.supply = {0, 0};
  problem.arcs = {{.src = 0, .dst = 5, .capacity = 1, .cost = 0}};
  IncrementalSolver solver;
  EXPECT_THAT(solver.Load(problem),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "arc 0 has dst 5 but node_count is 2"));
  EXPECT_EQ(solver.node_limit(), 0u);  // nothing loaded
  problem.arcs[0] = {.src = 1, .dst = 0, .capacity = -1, .cost = 0};
  EXPECT_THAT(solver.Load(problem),
              StatusIs(absl::StatusCode::kInvalidArgument, "capacity -1"));
  problem.supply = {0};
  EXPECT_THAT(IncrementalSolver().Load(problem),
              StatusIs(absl::StatusCode::kInvalidArgument, "1 supplies for 2"));
}

// A Quincy time-0 population: every task waiting, one sink; the shape on
// which cost scaling and relaxation are slowest and this solver fastest.
TEST(ScratchIncrementalTest, WholePopulationWaiting) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const McmfProblem problem = testgen::SchedulingNetwork(
        seed, {.task_count = 3000,
               .job_count = 30,
               .machine_count = 300,
               .rack_count = 10,
               .utilisation = 0.8 + 0.1 * static_cast<double>(seed),
               .max_preferences = 6});
    EXPECT_EQ(testgen::ExpectMatchesLemon(
                  problem, kScratchIncrementalSolve(problem, seed)),
              McmfOutcome::kOptimal)
        << seed;
  }
}

// Every node of a loaded problem is new and is priced after the new heads
// of its arcs. Placing them in repeated passes took one pass per node of a
// chain, quadratic: a 200,000-node path did not finish in two minutes. This
// 100,000-node chain is checked by its certificate alone (LEMON's network
// simplex is slow on such paths).
TEST(ScratchIncrementalTest, LoadsALongChainOfNewNodes) {
  const McmfProblem problem = testgen::ChainNetwork(3, {.node_count = 100'000,
                                                        .shortcuts = 20'000,
                                                        .max_hop = 50,
                                                        .endpoints = 4});
  const absl::StatusOr<McmfSolution> solution =
      kScratchIncrementalSolve(problem, 0);
  ASSERT_THAT(solution, IsOk());
  ASSERT_EQ(solution->outcome, McmfOutcome::kOptimal);
  EXPECT_THAT(CheckOptimalFlow(problem, *solution), IsOk());
}

TEST(ScratchIncrementalTest, CornerCases) {
  testgen::ExpectCornerCasesSolved(kScratchIncrementalSolve);
}

TEST(ScratchIncrementalTest, MatchesLemonOnRandomFeasibleNetworks) {
  testgen::ExpectMatchesLemonOnRandomFeasibleNetworks(kScratchIncrementalSolve);
}

TEST(ScratchIncrementalTest, MatchesLemonFeasibilityOnRandomSupplies) {
  testgen::ExpectMatchesLemonFeasibilityOnRandomSupplies(
      kScratchIncrementalSolve);
}

TEST(ScratchIncrementalTest, MatchesLemonOnSchedulingNetworks) {
  testgen::ExpectMatchesLemonOnSchedulingNetworks(kScratchIncrementalSolve);
}

TEST(ScratchIncrementalTest, MatchesLemonOnCappedSchedulingNetworks) {
  testgen::ExpectMatchesLemonOnCappedSchedulingNetworks(
      kScratchIncrementalSolve);
}

TEST(ScratchIncrementalTest, MatchesLemonOnLargeSchedulingNetwork) {
  testgen::ExpectMatchesLemonOnLargeSchedulingNetwork(kScratchIncrementalSolve);
}

TEST(ScratchIncrementalTest, MatchesLemonOnChains) {
  testgen::ExpectMatchesLemonOnChains(kScratchIncrementalSolve);
}

TEST(ScratchIncrementalTest, StopFlagSetBeforeSolve) {
  std::atomic<bool> stop{true};
  ScratchIncremental solver;
  solver.set_stop_flag(&stop);
  const McmfProblem problem = testgen::SchedulingNetwork(
      3, {.task_count = 100, .job_count = 3, .machine_count = 10});
  EXPECT_THAT(solver.Solve(problem),
              StatusIs(absl::StatusCode::kCancelled, "stopped"));
  stop = false;
  EXPECT_EQ(testgen::ExpectMatchesLemon(problem, solver.Solve(problem)),
            McmfOutcome::kOptimal);
}

// A stop can land anywhere: in a drain walk, mid-search, mid-flow or
// between phases. Whatever was done stays a consistent pseudoflow, and
// the next Solve finishes it to the optimum. No timing is asserted; the
// delays only spread the stops over the solve (slower builds stop later
// in it).
TEST(ScratchIncrementalTest, AStoppedSolveLeavesAStateTheNextSolveFinishes) {
  // A quarter of the size in a sanitizer build: the stops still land
  // mid-solve there, each step costing 10-20 times more.
  const McmfProblem problem = testgen::SchedulingNetwork(
      5, {.task_count = ::flowsched::testing::kSanitizedBuild ? 3000u : 12000u,
          .job_count = 100,
          .machine_count = ::flowsched::testing::kSanitizedBuild ? 225u : 900u,
          .rack_count = 40,
          .utilisation = 1.05,
          .max_preferences = 5});
  const testgen::LemonResult lemon = testgen::SolveWithLemon(problem);
  ASSERT_EQ(lemon.outcome, McmfOutcome::kOptimal);
  int cancelled = 0;
  // -1: raised before the solve starts.
  for (const int delay_us : {-1, 300, 1000, 3000, 10000}) {
    IncrementalSolver solver;
    ASSERT_THAT(solver.Load(problem), IsOk());
    std::atomic<bool> stop{delay_us < 0};
    solver.set_stop_flag(&stop);
    std::thread stopper([&stop, delay_us] {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      stop = true;
    });
    const absl::StatusOr<IncrementalResult> first = solver.Solve();
    stopper.join();
    if (!first.ok()) {
      EXPECT_THAT(first, StatusIs(absl::StatusCode::kCancelled, "stopped"));
      ++cancelled;
    }
    solver.set_stop_flag(nullptr);
    const absl::StatusOr<IncrementalResult> second = solver.Solve();
    ASSERT_THAT(second, IsOk()) << delay_us;
    ASSERT_EQ(second->outcome, McmfOutcome::kOptimal) << delay_us;
    EXPECT_EQ(second->total_cost, lemon.total_cost) << delay_us;
    McmfProblem exported;
    McmfSolution solution;
    std::vector<uint32_t> handles;
    solver.Export(exported, solution, handles);
    EXPECT_THAT(CheckOptimalFlow(exported, solution), IsOk()) << delay_us;
  }
  EXPECT_GT(cancelled, 0);  // at least the stop raised before
}

}  // namespace
}  // namespace flowsched::solver
