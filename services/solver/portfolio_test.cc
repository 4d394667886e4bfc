#include "services/solver/portfolio.h"

#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/solver/cost_scaling.h"
#include "services/solver/feasibility.h"
#include "services/solver/flow_checker.h"
#include "services/solver/lemon_reference.h"
#include "services/solver/solver_conformance.h"
#include "services/solver/test_graphs.h"

namespace flowsched::solver {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

// The generated scheduling network of `seed` at `utilisation`, solved by
// `portfolio` and compared with LEMON.
absl::StatusOr<McmfSolution> SolveAndCompare(Portfolio& portfolio,
                                             uint64_t seed,
                                             double utilisation) {
  testgen::SchedulingOptions options;
  options.utilisation = utilisation;
  const McmfProblem problem = testgen::SchedulingNetwork(seed, options);
  absl::StatusOr<McmfSolution> solution = portfolio.Solve(problem);
  testgen::ExpectMatchesLemon(problem, solution);
  return solution;
}

// A path of 40,000 nodes, its arcs of cost 2^30: the prices it needs are
// beyond cost scaling's floor (-2^60).
McmfProblem CostlyPath() {
  McmfProblem problem;
  problem.node_count = 40'000;
  problem.supply.assign(problem.node_count, 0);
  problem.supply.front() = 1;
  problem.supply.back() = -1;
  for (uint32_t v = 0; v + 1 < problem.node_count; ++v) {
    problem.arcs.push_back(
        {.src = v, .dst = v + 1, .capacity = 1, .cost = int64_t{1} << 30});
  }
  return problem;
}

TEST(PortfolioTest, WinnerIsOptimalOnSchedulingNetworks) {
  Portfolio portfolio;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    testgen::SchedulingOptions options;
    options.utilisation = 0.5 + 0.02 * static_cast<double>(seed);
    const McmfProblem problem = testgen::SchedulingNetwork(seed, options);
    auto solution = portfolio.Solve(problem);
    ASSERT_THAT(solution, IsOk());
    const testgen::LemonResult lemon = testgen::SolveWithLemon(problem);
    ASSERT_EQ(solution->outcome, lemon.outcome) << seed;
    if (lemon.outcome != McmfOutcome::kOptimal) continue;
    EXPECT_THAT(CheckOptimalFlow(problem, *solution), IsOk());
    EXPECT_EQ(solution->total_cost, lemon.total_cost);
    EXPECT_TRUE(solution->algorithm == "relaxation" ||
                solution->algorithm == "cost_scaling" ||
                solution->algorithm == "incremental")
        << solution->algorithm;
  }
}

TEST(PortfolioTest, MeasureSourceArcsCountsArcsWithCapacity) {
  McmfProblem problem;
  problem.node_count = 4;
  problem.supply = {2, 1, 0, -3};
  problem.arcs = {{.src = 0, .dst = 3, .capacity = 2, .cost = 1},
                  {.src = 0, .dst = 2, .capacity = 1, .cost = 0},
                  {.src = 0, .dst = 1, .capacity = 1, .cost = 0},
                  {.src = 1, .dst = 3, .capacity = 3, .cost = 2},
                  {.src = 1, .dst = 2, .capacity = 0, .cost = 0},  // dead
                  {.src = 2, .dst = 3, .capacity = 5, .cost = 0}};
  EXPECT_DOUBLE_EQ(MeasureSourceArcs(problem).mean_degree, 2.0);
  EXPECT_DOUBLE_EQ(MeasureSourceArcs(problem).zero_cost_share, 0.5);
  problem.supply = {0, 0, 0, 0};
  EXPECT_DOUBLE_EQ(MeasureSourceArcs(problem).mean_degree, 0.0);
  EXPECT_DOUBLE_EQ(MeasureSourceArcs(problem).zero_cost_share, 0.0);
}

// Below relaxation_min_source_degree relaxation never runs: unstaggered,
// the primal-dual races cost scaling from the start, and the result is as
// exact.
TEST(PortfolioTest, FewArcsPerSourceSkipRelaxation) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    Portfolio portfolio;
    portfolio.relaxation_min_source_degree = 1e9;
    portfolio.stagger_max_arcs = 0;
    const absl::StatusOr<McmfSolution> solution = SolveAndCompare(
        portfolio, seed, 0.6 + 0.05 * static_cast<double>(seed));
    ASSERT_THAT(solution, IsOk());
    EXPECT_NE(solution->algorithm, "relaxation") << seed;
  }
}

// A generated scheduling network whose tasks' arcs cost nothing but
// their first (unscheduled) one: load spreading's shape, where the price
// is on the arcs the tasks share.
McmfProblem FreeTaskArcsNetwork(uint64_t seed) {
  testgen::SchedulingOptions options;
  options.utilisation = 0.9;
  McmfProblem problem = testgen::SchedulingNetwork(seed, options);
  std::vector<bool> seen(problem.node_count, false);
  for (McmfArc& arc : problem.arcs) {
    if (problem.supply[arc.src] <= 0) continue;
    if (seen[arc.src]) arc.cost = 0;
    seen[arc.src] = true;
  }
  return problem;
}

// A delay no test waits out: the second lane starts only when the first
// fails.
constexpr int64_t kNeverNsPerArc = int64_t{1} << 40;

// The algorithm that answered `problem`, once the answer matched LEMON.
std::string WinnerMatchingLemon(Portfolio& portfolio,
                                const McmfProblem& problem) {
  const absl::StatusOr<McmfSolution> solution = portfolio.Solve(problem);
  testgen::ExpectMatchesLemon(problem, solution);
  return solution.ok() ? solution->algorithm : "(failed)";
}

// Small networks are staggered: the lane the shape favours answers alone.
TEST(PortfolioTest, StaggeredTheFavouredLaneAnswersAlone) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    Portfolio portfolio;
    portfolio.stagger_delay_ns_per_arc = kNeverNsPerArc;
    const McmfProblem free_arcs = FreeTaskArcsNetwork(seed);
    ASSERT_GE(MeasureSourceArcs(free_arcs).zero_cost_share, 0.25);
    EXPECT_EQ(WinnerMatchingLemon(portfolio, free_arcs), "cost_scaling")
        << seed;

    testgen::SchedulingOptions few;
    few.max_preferences = 1;
    const McmfProblem priced = testgen::SchedulingNetwork(seed, few);
    ASSERT_LT(MeasureSourceArcs(priced).mean_degree, 4.0);
    ASSERT_LT(MeasureSourceArcs(priced).zero_cost_share, 0.25);
    EXPECT_EQ(WinnerMatchingLemon(portfolio, priced), "incremental") << seed;

    testgen::SchedulingOptions many;
    many.max_preferences = 8;
    const McmfProblem preferring = testgen::SchedulingNetwork(seed, many);
    ASSERT_GE(MeasureSourceArcs(preferring).mean_degree, 4.0);
    ASSERT_LT(MeasureSourceArcs(preferring).zero_cost_share, 0.25);
    const std::string winner = WinnerMatchingLemon(portfolio, preferring);
    EXPECT_TRUE(winner == "relaxation" || winner == "incremental")
        << seed << " " << winner;
  }
}

// A favoured lane that fails starts the other at once: CostlyPath behind a
// free first arc favours cost scaling, whose price range it exceeds.
TEST(PortfolioTest, StaggeredAFailedFirstLaneStartsTheOther) {
  McmfProblem problem = CostlyPath();
  problem.arcs.front().cost = 0;
  ASSERT_EQ(MeasureSourceArcs(problem).zero_cost_share, 1.0);
  Portfolio portfolio;
  portfolio.stagger_delay_ns_per_arc = kNeverNsPerArc;
  const absl::StatusOr<McmfSolution> solution = portfolio.Solve(problem);
  ASSERT_THAT(solution, IsOk());
  EXPECT_EQ(solution->total_cost,
            (int64_t{1} << 30) * (problem.node_count - 2));
  EXPECT_NE(solution->algorithm, "cost_scaling");
}

// Raced from the start (no staggering), or staggered with the second lane
// starting after a delay shorter than the first lane's solve (1 ns per
// arc), either lane may win, and the answer is as exact.
TEST(PortfolioTest, RacedOrLateSecondLaneMatchesLemon) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const double utilisation = 0.6 + 0.05 * static_cast<double>(seed);
    Portfolio raced;
    raced.stagger_max_arcs = 0;
    ASSERT_THAT(SolveAndCompare(raced, seed, utilisation), IsOk());
    Portfolio late;
    late.stagger_delay_ns_per_arc = 1;
    ASSERT_THAT(SolveAndCompare(late, seed, utilisation), IsOk());
    ASSERT_THAT(SolveAndCompare(late, seed, utilisation), IsOk());
  }
}

// The delay is the rate times the arcs, 0 for a rate of 0 or less, and
// saturates at a day instead of overflowing.
TEST(PortfolioTest, StaggerDelayIsRateTimesArcsUpToADay) {
  constexpr int64_t kDayNs = int64_t{86'400} * 1'000'000'000;
  EXPECT_EQ(StaggerDelayNs(400, 50'000), 20'000'000);
  EXPECT_EQ(StaggerDelayNs(0, 50'000), 0);
  EXPECT_EQ(StaggerDelayNs(-5, 50'000), 0);
  EXPECT_EQ(StaggerDelayNs(400, 0), 0);
  EXPECT_EQ(StaggerDelayNs(kNeverNsPerArc, 40'000), kDayNs);
  EXPECT_EQ(StaggerDelayNs(std::numeric_limits<int64_t>::max(), 100'000),
            kDayNs);
  EXPECT_EQ(StaggerDelayNs(kDayNs, 1), kDayNs);
  EXPECT_EQ(StaggerDelayNs(kDayNs, 2), kDayNs);
}

TEST(PortfolioTest, MatchesLemonOnRandomNetworks) {
  const testgen::SolveFn solve = [](const McmfProblem& problem, uint64_t) {
    return Portfolio().Solve(problem);
  };
  testgen::ExpectMatchesLemonOnRandomFeasibleNetworks(solve);
  testgen::ExpectMatchesLemonFeasibilityOnRandomSupplies(solve);
  testgen::ExpectMatchesLemonOnCappedSchedulingNetworks(solve);
  testgen::ExpectMatchesLemonOnChains(solve);
  testgen::ExpectCornerCasesSolved(solve);
}

// Firmament's incremental portfolio: both algorithms resume from another
// round's optimum; infeasible networks are still recognised (cost scaling
// checks feasibility first and stops the relaxation).
TEST(PortfolioTest, WarmStartMatchesLemon) {
  const testgen::SolveFn solve = [](const McmfProblem& problem, uint64_t seed) {
    const testgen::WarmStartPoint start =
        testgen::PerturbedOptimum(problem, seed);
    return Portfolio().SolveFrom(problem, start.flow, start.potentials);
  };
  testgen::ExpectMatchesLemonOnRandomFeasibleNetworks(solve);
  testgen::ExpectMatchesLemonFeasibilityOnRandomSupplies(solve);
  testgen::ExpectMatchesLemonOnSchedulingNetworks(solve);
  testgen::ExpectMatchesLemonOnCappedSchedulingNetworks(solve);
  testgen::ExpectCornerCasesSolved(solve);
}

// Relaxation out of budget at once: the primal-dual takes its core, and
// whichever of it and cost scaling wins, the result is exact.
TEST(PortfolioTest, PastRelaxationsBudgetThePrimalDualRaces) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    Portfolio portfolio;
    portfolio.relaxation_budget_ns_per_arc = 0;
    portfolio.relaxation_budget_min_ns = 1;
    portfolio.relaxation_min_source_degree = 0;
    portfolio.stagger_max_arcs = 0;
    testgen::SchedulingOptions options;
    options.task_count = 2000;
    options.machine_count = 150;
    options.utilisation = 0.7 + 0.04 * static_cast<double>(seed);
    const McmfProblem problem = testgen::SchedulingNetwork(seed, options);
    const absl::StatusOr<McmfSolution> solution = portfolio.Solve(problem);
    testgen::ExpectMatchesLemon(problem, solution);
    ASSERT_THAT(solution, IsOk());
    EXPECT_TRUE(solution->algorithm == "cost_scaling" ||
                solution->algorithm == "incremental")
        << solution->algorithm;
  }
}

// With relaxation and the primal-dual both off (the mirror's first solve
// runs the primal-dual itself), cost scaling answers alone, as exactly.
TEST(PortfolioTest, WithoutRelaxationAndPrimalDualCostScalingAnswers) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    Portfolio portfolio;
    portfolio.with_relaxation = false;
    portfolio.with_primal_dual = false;
    const absl::StatusOr<McmfSolution> solution = SolveAndCompare(
        portfolio, seed, 0.6 + 0.07 * static_cast<double>(seed));
    ASSERT_THAT(solution, IsOk());
    EXPECT_EQ(solution->algorithm, "cost_scaling") << seed;
  }
  // Cost scaling's own error is the answer then, not a racer's that never
  // ran.
  Portfolio alone;
  alone.with_relaxation = false;
  alone.with_primal_dual = false;
  EXPECT_THAT(alone.Solve(CostlyPath()),
              StatusIs(absl::StatusCode::kOutOfRange, ""));
}

// CostlyPath needs scaled prices beyond
// cost scaling's floor and fails it; relaxation accepts the path, so
// the portfolio still answers, and when the problem itself overflows (a total
// cost of 2^85) it says so rather than naming cost scaling's narrower range.
TEST(PortfolioTest, CostsBeyondCostScalingsRange) {
  McmfProblem problem = CostlyPath();
  constexpr int64_t kCost = int64_t{1} << 30;
  absl::StatusOr<McmfSolution> solution = Portfolio().Solve(problem);
  ASSERT_THAT(solution, IsOk());
  EXPECT_EQ(solution->outcome, McmfOutcome::kOptimal);
  EXPECT_EQ(solution->total_cost, kCost * (problem.node_count - 1));
  EXPECT_NE(solution->algorithm, "cost_scaling");

  constexpr int64_t kUnits = int64_t{1} << 40;
  problem.supply.front() = kUnits;
  problem.supply.back() = -kUnits;
  for (McmfArc& arc : problem.arcs) arc.capacity = kUnits;
  EXPECT_THAT(CostScaling().Solve(problem),
              StatusIs(absl::StatusCode::kOutOfRange, "2^60"));
  EXPECT_THAT(Portfolio().Solve(problem),
              StatusIs(absl::StatusCode::kOutOfRange, "total cost"));
}

// A stop set by the caller cancels the race, raced from the start or
// staggered with either lane first.
TEST(PortfolioTest, ACallerStopCancelsTheRace) {
  std::atomic<bool> stop{true};
  const McmfProblem priced =
      testgen::SchedulingNetwork(3, testgen::SchedulingOptions{});
  const McmfProblem free_arcs = FreeTaskArcsNetwork(3);
  for (const uint64_t stagger_max_arcs : {uint64_t{0}, uint64_t{100'000}}) {
    Portfolio portfolio(&stop);
    portfolio.stagger_max_arcs = stagger_max_arcs;
    EXPECT_THAT(portfolio.Solve(priced),
                StatusIs(absl::StatusCode::kCancelled, ""));
    EXPECT_THAT(portfolio.Solve(free_arcs),
                StatusIs(absl::StatusCode::kCancelled, ""));
  }
}

// The race's stop flag reaches the up-front max flow both algorithms run,
// so a losing algorithm leaves the race without finishing it.
TEST(FeasibilityTest, AnswersAndHonoursAStop) {
  const McmfProblem feasible =
      testgen::SchedulingNetwork(3, testgen::SchedulingOptions{});
  EXPECT_EQ(CheckFeasibility(feasible, nullptr), Feasibility::kFeasible);
  EXPECT_TRUE(HasFeasibleFlow(feasible));
  std::atomic<bool> stop{true};
  EXPECT_EQ(CheckFeasibility(feasible, &stop), Feasibility::kStopped);
  McmfProblem cut;  // supply with no way to its demand
  cut.node_count = 3;
  cut.supply = {1, 0, -1};
  cut.arcs = {McmfArc{.src = 0, .dst = 1, .capacity = 1, .cost = 0}};
  EXPECT_EQ(CheckFeasibility(cut, nullptr), Feasibility::kInfeasible);
  EXPECT_FALSE(HasFeasibleFlow(cut));
}

}  // namespace
}  // namespace flowsched::solver
