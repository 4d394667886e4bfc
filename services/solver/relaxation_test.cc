#include "services/solver/relaxation.h"

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

namespace flowsched::solver {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;
using ::testing::IsEmpty;

// Checks the certificate and compares outcome and cost with LEMON's
// NetworkSimplex. Returns the solution (empty on error) for chaining.
McmfSolution ExpectRelaxationMatchesLemon(
    const McmfProblem& problem, const absl::StatusOr<McmfSolution>& solution) {
  EXPECT_THAT(solution, IsOk());
  if (!solution.ok()) return {};
  const testgen::LemonResult lemon = testgen::SolveWithLemon(problem);
  EXPECT_EQ(solution->outcome, lemon.outcome);
  EXPECT_EQ(solution->algorithm, "relaxation");
  if (solution->outcome == McmfOutcome::kOptimal) {
    EXPECT_THAT(CheckOptimalFlow(problem, *solution), IsOk());
    if (lemon.outcome == McmfOutcome::kOptimal) {
      EXPECT_EQ(solution->total_cost, lemon.total_cost);
    }
  } else {
    EXPECT_THAT(solution->flow, IsEmpty());
    EXPECT_THAT(solution->potentials, IsEmpty());
  }
  return *solution;
}

McmfOutcome RelaxationSolveAndCompare(const McmfProblem& problem,
                                      RelaxationOptions options = {}) {
  Relaxation solver(options);
  return ExpectRelaxationMatchesLemon(problem, solver.Solve(problem)).outcome;
}

// Correctness must not depend on the tuning knobs.
RelaxationOptions RelaxationOptionsForSeed(uint64_t seed) {
  RelaxationOptions options;
  options.single_node_passes = static_cast<int>(seed % 4);
  options.arc_prioritisation = seed % 3 != 2;
  return options;
}

TEST(RelaxationTest, NameAndRegistry) {
  EXPECT_EQ(Relaxation().name(), "relaxation");
  testgen::ExpectRegistered("relaxation");
}

TEST(RelaxationTest, Infeasible) {
  McmfProblem problem;
  problem.node_count = 2;
  problem.supply = {3, -3};
  problem.arcs = {{.src = 0, .dst = 1, .capacity = 2, .cost = 7}};
  EXPECT_EQ(RelaxationSolveAndCompare(problem), McmfOutcome::kInfeasible);
  problem.arcs.clear();
  EXPECT_EQ(RelaxationSolveAndCompare(problem), McmfOutcome::kInfeasible);
}

TEST(RelaxationTest, Errors) {
  testgen::ExpectRejectsUnbalancedAndOverflowing(
      [](const McmfProblem& problem, uint64_t) {
        return Relaxation().Solve(problem);
      },
      "total cost");
}

TEST(RelaxationTest, LargeButRepresentableNumbers) {
  McmfProblem problem;
  problem.node_count = 3;
  problem.supply = {kMaxArcCapacity, 0, -kMaxArcCapacity};
  problem.arcs = {
      {.src = 0, .dst = 1, .capacity = kMaxArcCapacity, .cost = 1000},
      {.src = 1, .dst = 2, .capacity = int64_t{1} << 30, .cost = -kMaxArcCost},
      {.src = 1, .dst = 2, .capacity = kMaxArcCapacity, .cost = 5},
      {.src = 0, .dst = 2, .capacity = kMaxArcCapacity, .cost = 2000}};
  RelaxationSolveAndCompare(problem);
}

TEST(RelaxationTest, Deterministic) {
  testgen::ExpectDeterministic([](const McmfProblem& problem, uint64_t) {
    return Relaxation().Solve(problem);
  });
}

// The shared property tests (solver_conformance.h).
const testgen::SolveFn kRelaxationSolve = [](const McmfProblem& problem,
                                             uint64_t seed) {
  return Relaxation(RelaxationOptionsForSeed(seed)).Solve(problem);
};

TEST(RelaxationTest, CornerCases) {
  testgen::ExpectCornerCasesSolved(kRelaxationSolve);
}

TEST(RelaxationTest, MatchesLemonOnRandomFeasibleNetworks) {
  testgen::ExpectMatchesLemonOnRandomFeasibleNetworks(kRelaxationSolve);
}

TEST(RelaxationTest, MatchesLemonFeasibilityOnRandomSupplies) {
  testgen::ExpectMatchesLemonFeasibilityOnRandomSupplies(kRelaxationSolve);
}

// Without the up-front max flow (the portfolio's setting, with a budget)
// an infeasible problem ends with the method's own cut certificate or runs
// out of the budget: some circulate flow around positive cycles while
// their prices climb towards the 2^61 guard, which without a budget takes
// practically forever. Never a wrong outcome.
TEST(RelaxationTest, WithoutTheMaxFlowInfeasibilityCostsTheBudget) {
  int cut = 0;
  int out_of_budget = 0;
  for (uint64_t seed = 0; seed < 240; ++seed) {
    SCOPED_TRACE(seed);
    testgen::RandomNetworkOptions shape;
    shape.node_count = static_cast<uint32_t>(2 + seed % 40);
    shape.arc_count = shape.node_count * static_cast<uint32_t>(2 + seed % 4);
    shape.max_capacity = 10;
    shape.min_cost = -20;
    const McmfProblem problem = testgen::RandomSupplyNetwork(seed, shape, 4);
    RelaxationOptions options = RelaxationOptionsForSeed(seed);
    options.check_feasibility = false;
    options.cpu_budget_ns = 2'000'000;
    options.extend_below_surplus_fraction = 0;
    const absl::StatusOr<McmfSolution> solution =
        Relaxation(options).Solve(problem);
    if (!solution.ok()) {
      // Also possible on a feasible problem in a slow (sanitizer) build:
      // never a wrong outcome.
      EXPECT_THAT(solution,
                  StatusIs(absl::StatusCode::kDeadlineExceeded, "CPU budget"));
      if (testgen::SolveWithLemon(problem).outcome ==
          McmfOutcome::kInfeasible) {
        ++out_of_budget;
      }
      continue;
    }
    if (ExpectRelaxationMatchesLemon(problem, solution).outcome ==
        McmfOutcome::kInfeasible) {
      ++cut;
    }
  }
  EXPECT_GT(cut, 0);
  EXPECT_GT(out_of_budget, 0);
}

TEST(RelaxationTest, MatchesLemonOnSchedulingNetworks) {
  testgen::ExpectMatchesLemonOnSchedulingNetworks(kRelaxationSolve);
}

TEST(RelaxationTest, MatchesLemonOnCappedSchedulingNetworks) {
  testgen::ExpectMatchesLemonOnCappedSchedulingNetworks(kRelaxationSolve);
}

TEST(RelaxationTest, MatchesLemonOnLargeSchedulingNetwork) {
  testgen::ExpectMatchesLemonOnLargeSchedulingNetwork(kRelaxationSolve);
}

TEST(RelaxationTest, MatchesLemonOnChains) {
  testgen::ExpectMatchesLemonOnChains(kRelaxationSolve);
}

// Firmament figure 9 (same construction as cost_scaling_test.cc): a
// load-spreading cluster (convex X -> machine arcs) already running tasks,
// and one new job of `new_tasks` tasks contending for the remaining slots.
McmfProblem LoadSpreadingNetworkWithNewJob(uint32_t machines, int64_t slots,
                                           uint32_t new_tasks) {
  constexpr int64_t kPerTaskCost = 10;
  constexpr int64_t kUnscheduledCost = 100'000;
  constexpr int64_t kPreemptionCost = 200'000;
  std::vector<int64_t> running(machines);
  int64_t total_running = 0;
  for (uint32_t m = 0; m < machines; ++m) {
    running[m] = static_cast<int64_t>((m * 7) % static_cast<uint32_t>(slots));
    total_running += running[m];
  }
  // Nodes: running tasks, new tasks, U_old, U_new, X, machines, sink.
  const auto running_count = static_cast<uint32_t>(total_running);
  const uint32_t first_new = running_count;
  const uint32_t u_old = first_new + new_tasks;
  const uint32_t u_new = u_old + 1;
  const uint32_t cluster = u_new + 1;
  const uint32_t first_machine = cluster + 1;
  const uint32_t sink = first_machine + machines;
  McmfProblem problem;
  problem.node_count = sink + 1;
  problem.supply.assign(problem.node_count, 0);
  uint32_t task = 0;
  for (uint32_t m = 0; m < machines; ++m) {
    for (int64_t k = 0; k < running[m]; ++k, ++task) {
      problem.supply[task] = 1;
      problem.arcs.push_back({task, first_machine + m, 1, 0});
      problem.arcs.push_back({task, u_old, 1, kPreemptionCost});
    }
  }
  for (uint32_t t = first_new; t < u_old; ++t) {
    problem.supply[t] = 1;
    problem.arcs.push_back({t, cluster, 1, 0});
    problem.arcs.push_back({t, u_new, 1, kUnscheduledCost});
  }
  problem.arcs.push_back({u_old, sink, total_running, 0});
  problem.arcs.push_back({u_new, sink, new_tasks, 0});
  for (uint32_t m = 0; m < machines; ++m) {
    for (int64_t k = 1; k <= slots - running[m]; ++k) {
      problem.arcs.push_back(
          {cluster, first_machine + m, 1, kPerTaskCost * (running[m] + k)});
    }
    problem.arcs.push_back({first_machine + m, sink, slots, 0});
  }
  problem.supply[sink] = -(total_running + int64_t{new_tasks});
  return problem;
}

TEST(RelaxationTest, ContendedLoadSpreadingNewJob) {
  const McmfProblem problem = LoadSpreadingNetworkWithNewJob(400, 12, 5000);
  const McmfSolution solution =
      ExpectRelaxationMatchesLemon(problem, Relaxation().Solve(problem));
  EXPECT_EQ(solution.outcome, McmfOutcome::kOptimal);
}

TEST(RelaxationTest, StopFlagSetBeforeSolve) {
  std::atomic<bool> stop{true};
  Relaxation solver;
  solver.set_stop_flag(&stop);
  const McmfProblem problem = testgen::SchedulingNetwork(
      3, {.task_count = 100, .job_count = 3, .machine_count = 10});
  EXPECT_THAT(solver.Solve(problem),
              StatusIs(absl::StatusCode::kCancelled, "stopped"));
  // Clearing the flag (or detaching it) lets the same instance solve again.
  stop = false;
  ExpectRelaxationMatchesLemon(problem, solver.Solve(problem));
  stop = true;
  solver.set_stop_flag(nullptr);
  ExpectRelaxationMatchesLemon(problem, solver.Solve(problem));
}

TEST(RelaxationTest, StopFlagCancelsARunningSolve) {
  // A contended network that takes relaxation many iterations; another
  // thread raises the flag once the solve has started. No timing is
  // asserted: if the solve wins the race it must simply be correct.
  const McmfProblem problem = LoadSpreadingNetworkWithNewJob(1000, 12, 12000);
  std::atomic<bool> stop{false};
  std::atomic<bool> started{false};
  Relaxation solver;
  solver.set_stop_flag(&stop);
  std::thread stopper([&] {
    while (!started.load()) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stop = true;
  });
  started = true;
  const absl::StatusOr<McmfSolution> result = solver.Solve(problem);
  stopper.join();
  if (result.ok()) {
    EXPECT_THAT(CheckOptimalFlow(problem, *result), IsOk());
  } else {
    EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled, "stopped"));
  }
}

TEST(RelaxationTest, GivesUpPastItsCpuBudget) {
  const McmfProblem problem = LoadSpreadingNetworkWithNewJob(400, 12, 5000);
  RelaxationOptions options;
  options.cpu_budget_ns = 1;
  EXPECT_THAT(Relaxation(options).Solve(problem),
              StatusIs(absl::StatusCode::kDeadlineExceeded, "CPU budget"));
  options.cpu_budget_ns = 0;  // no limit
  EXPECT_EQ(
      ExpectRelaxationMatchesLemon(problem, Relaxation(options).Solve(problem))
          .outcome,
      McmfOutcome::kOptimal);
}

// The budget is extended once when a solve is nearly done: 1% of the
// surplus by default, measured on the runs the comment of
// RelaxationOptions::extend_below_surplus_fraction cites.
TEST(RelaxationTest, ExtendsItsBudgetOnlyWhenNearlyDone) {
  EXPECT_TRUE(ExtendRelaxationBudget(0, 58'199, 0.01));
  EXPECT_TRUE(ExtendRelaxationBudget(1, 58'199, 0.01));
  EXPECT_TRUE(ExtendRelaxationBudget(581, 58'199, 0.01));
  EXPECT_FALSE(ExtendRelaxationBudget(583, 58'199, 0.01));
  EXPECT_FALSE(ExtendRelaxationBudget(6'004, 55'000, 0.01));     // 110% load
  EXPECT_FALSE(ExtendRelaxationBudget(131'469, 146'250, 0.01));  // time 0
  EXPECT_FALSE(ExtendRelaxationBudget(0, 100, 0));  // 0 never extends
  EXPECT_FALSE(ExtendRelaxationBudget(0, 0, 0.01));
  const Int128 huge = Int128{1} << 80;  // sums of 2^62 surpluses
  EXPECT_TRUE(ExtendRelaxationBudget(huge / 200, huge, 0.01));
  EXPECT_FALSE(ExtendRelaxationBudget(huge / 50, huge, 0.01));
}

// The extension wired into the solve: with a budget of 1 ns every check
// finds it spent, so a solve passes its first check (16,384 units of work,
// kStopCheckInterval) only when extended and its second not at all. Solves
// whose work falls between the two therefore finish exactly when the
// extension applies (fraction 1: always); the sweep keeps the test
// independent of where exactly that window lies.
TEST(RelaxationTest, AnExtendedSolveFinishesExact) {
  int rescued = 0;
  for (uint32_t tasks = 64; tasks <= 320; tasks += 8) {
    testgen::SchedulingOptions shape;
    shape.task_count = tasks;
    shape.machine_count = tasks / 8;
    shape.job_count = 20;
    const McmfProblem problem = testgen::SchedulingNetwork(7, shape);
    RelaxationOptions never;
    never.cpu_budget_ns = 1;
    never.extend_below_surplus_fraction = 0;
    RelaxationOptions always = never;
    always.extend_below_surplus_fraction = 1.0;
    const absl::StatusOr<McmfSolution> unextended =
        Relaxation(never).Solve(problem);
    const absl::StatusOr<McmfSolution> extended =
        Relaxation(always).Solve(problem);
    if (unextended.ok()) {
      EXPECT_TRUE(extended.ok()) << tasks << " tasks";
      continue;
    }
    EXPECT_THAT(unextended,
                StatusIs(absl::StatusCode::kDeadlineExceeded, "CPU budget"));
    if (!extended.ok()) {
      EXPECT_THAT(extended,
                  StatusIs(absl::StatusCode::kDeadlineExceeded, "CPU budget"));
      continue;
    }
    ++rescued;
    ExpectRelaxationMatchesLemon(problem, extended);
  }
  EXPECT_GT(rescued, 0) << "no solve finished only thanks to the extension";
}

// A solve gives up as stalled when a window removed less than a fifth of
// what was left, unless it is nearly done; the figures are the portfolio
// traces RelaxationOptions::stall_window_ns cites.
TEST(RelaxationTest, GivesUpOnlyWhenStalled) {
  // A whole Quincy population waiting: 96.6% of 146,250 units left, then
  // 92.5%.
  EXPECT_TRUE(RelaxationStalled(135'208, 141'278, 146'250, 0.01));
  // 110% load: the overload that must stay unscheduled keeps it near 9%.
  EXPECT_TRUE(RelaxationStalled(5'088, 5'335, 55'000, 0.01));
  // A win: 4.3% left, then 0.8%.
  EXPECT_FALSE(RelaxationStalled(466, 2'503, 58'199, 0.01));
  // A win's last unit may take a while: within 1% of done it never stalls.
  EXPECT_FALSE(RelaxationStalled(1, 1, 58'199, 0.01));
  EXPECT_TRUE(RelaxationStalled(1, 1, 58'199, 0));
  // Exactly a fifth removed is progress enough.
  EXPECT_FALSE(RelaxationStalled(80, 100, 1'000, 0.01));
  EXPECT_TRUE(RelaxationStalled(81, 100, 1'000, 0.01));
  EXPECT_FALSE(RelaxationStalled(0, 0, 1'000, 0));  // done
  const Int128 huge = Int128{1} << 93;  // n * 2^62 surpluses at most
  EXPECT_TRUE(RelaxationStalled(huge - 1, huge, huge, 0.01));
  EXPECT_FALSE(RelaxationStalled(huge / 2, huge, huge, 0.01));
}

// The rule wired into the solve. With 1 ns windows every check (16,384
// units of work) ends a window, so what happens depends on the work alone,
// not on the machine: a network routed within two windows finishes
// (the first window is never judged), a larger one stalls, since its first
// pass only moves units from tasks to machines and the positive surplus
// falls slowly at that grain. Either way the outcome is exact or
// DeadlineExceeded, never a wrong answer, and without windows every one
// of them finishes exact. (Which runs stall at real windows, an eighth of
// the portfolio's budget, is GivesUpOnlyWhenStalled's figures.)
TEST(RelaxationTest, AStalledSolveGivesUpAndNeverAnswersWrong) {
  int stalled = 0;
  int finished = 0;
  for (const uint32_t tasks : {200u, 400u, 3'000u, 6'000u}) {
    for (const double utilisation : {0.5, 0.9, 1.3}) {
      testgen::SchedulingOptions shape;
      shape.task_count = tasks;
      shape.machine_count = tasks / 12;
      shape.job_count = 10;
      shape.utilisation = utilisation;
      const McmfProblem problem = testgen::SchedulingNetwork(tasks, shape);
      RelaxationOptions options;
      options.stall_window_ns = 1;
      const absl::StatusOr<McmfSolution> windowed =
          Relaxation(options).Solve(problem);
      if (windowed.ok()) {
        ++finished;
        ExpectRelaxationMatchesLemon(problem, windowed);
        continue;
      }
      ++stalled;
      EXPECT_THAT(windowed, StatusIs(absl::StatusCode::kDeadlineExceeded,
                                     "progress stalled"))
          << tasks << " tasks, utilisation " << utilisation;
      options.stall_window_ns = 0;
      ExpectRelaxationMatchesLemon(problem, Relaxation(options).Solve(problem));
    }
  }
  EXPECT_GT(stalled, 0);
  EXPECT_GT(finished, 0);
}

// Relaxation as a repair engine: from the optimum of a perturbed network
// (the previous round's) it must still end exactly optimal.
TEST(RelaxationWarmStartTest, MatchesLemonFromAPerturbedOptimum) {
  const testgen::SolveFn solve = [](const McmfProblem& problem, uint64_t seed) {
    const testgen::WarmStartPoint start =
        testgen::PerturbedOptimum(problem, seed);
    return Relaxation().SolveFrom(problem, {start.flow, start.potentials});
  };
  testgen::ExpectMatchesLemonOnRandomFeasibleNetworks(solve);
  testgen::ExpectMatchesLemonOnSchedulingNetworks(solve);
  testgen::ExpectMatchesLemonOnLargeSchedulingNetwork(solve);
  testgen::ExpectCornerCasesSolved(solve);
}

TEST(RelaxationWarmStartTest, ShortOrEmptyStartsAndFarApartPrices) {
  const McmfProblem problem =
      testgen::SchedulingNetwork(7, testgen::SchedulingOptions{});
  // An empty start is a cold start without the up-front max flow.
  ExpectRelaxationMatchesLemon(problem, Relaxation().SolveFrom(problem, {}));
  // A start for fewer arcs and nodes (new ones since): the rest start at 0.
  testgen::WarmStartPoint start = testgen::PerturbedOptimum(problem, 7);
  start.flow.resize(start.flow.size() / 2);
  start.potentials.resize(start.potentials.size() / 2);
  ExpectRelaxationMatchesLemon(
      problem, Relaxation().SolveFrom(problem, {start.flow, start.potentials}));
  // Prices too far apart to shift safely are refused, not wrapped.
  std::vector<int64_t> wide(problem.node_count, 0);
  wide[0] = int64_t{1} << 61;
  EXPECT_THAT(Relaxation().SolveFrom(problem, {{}, wide}),
              StatusIs(absl::StatusCode::kOutOfRange, "span more than 2^60"));
}

}  // namespace
}  // namespace flowsched::solver
