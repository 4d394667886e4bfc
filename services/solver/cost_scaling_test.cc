#include "services/solver/cost_scaling.h"

#include <cstdint>
#include <random>
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
McmfSolution ExpectCostScalingMatchesLemon(
    const McmfProblem& problem, const absl::StatusOr<McmfSolution>& solution) {
  EXPECT_THAT(solution, IsOk());
  if (!solution.ok()) return {};
  const testgen::LemonResult lemon = testgen::SolveWithLemon(problem);
  EXPECT_EQ(solution->outcome, lemon.outcome);
  EXPECT_EQ(solution->algorithm, "cost_scaling");
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

McmfOutcome CostScalingSolveAndCompare(const McmfProblem& problem,
                                       CostScalingOptions options = {}) {
  CostScaling solver(options);
  return ExpectCostScalingMatchesLemon(problem, solver.Solve(problem)).outcome;
}

TEST(CostScalingTest, NameAndRegistry) {
  EXPECT_EQ(CostScaling().name(), "cost_scaling");
  testgen::ExpectRegistered("cost_scaling");
}

TEST(CostScalingTest, Infeasible) {
  McmfProblem problem;
  problem.node_count = 2;
  problem.supply = {3, -3};
  problem.arcs = {{.src = 0, .dst = 1, .capacity = 2, .cost = 7}};
  EXPECT_EQ(CostScalingSolveAndCompare(problem), McmfOutcome::kInfeasible);
  problem.arcs.clear();
  EXPECT_EQ(CostScalingSolveAndCompare(problem), McmfOutcome::kInfeasible);
}

TEST(CostScalingTest, Errors) {
  testgen::ExpectRejectsUnbalancedAndOverflowing(
      [](const McmfProblem& problem, uint64_t) {
        return CostScaling().Solve(problem);
      },
      "total cost");

  McmfProblem small;
  small.node_count = 2;
  small.supply = {1, -1};
  small.arcs = {{.src = 0, .dst = 1, .capacity = 1, .cost = 1}};
  EXPECT_THAT(CostScaling({.alpha = 1}).Solve(small),
              StatusIs(absl::StatusCode::kInvalidArgument, "alpha"));
}

// One unit along a path of `nodes` nodes whose arcs all cost kMaxArcCost:
// the potentials must spread over (nodes - 1) * 2^30, (nodes + 1) times
// that scaled.
McmfProblem ExpensivePath(uint32_t nodes, int64_t units) {
  McmfProblem problem;
  problem.node_count = nodes;
  problem.supply.assign(nodes, 0);
  problem.supply.front() = units;
  problem.supply.back() = -units;
  for (uint32_t v = 0; v + 1 < nodes; ++v) {
    problem.arcs.push_back(
        {.src = v, .dst = v + 1, .capacity = units, .cost = kMaxArcCost});
  }
  return problem;
}

// Prices are checked as they move, not bounded up front by the textbook
// drift ((n + 1)^2 * max|cost| <= 2^57 until 2026-11-25), so large costs on
// many nodes are solved whenever the prices they need fit.
TEST(CostScalingTest, LargeCostsOnManyNodes) {
  // 12,000 nodes and costs up to 2^30: (n + 1)^2 * max|cost| is 2^57.1.
  for (uint64_t seed = 0; seed < 2; ++seed) {
    const McmfProblem problem =
        testgen::RandomFeasibleNetwork(seed, {.node_count = 12'000,
                                              .arc_count = 36'000,
                                              .max_capacity = 1'000,
                                              .min_cost = -kMaxArcCost,
                                              .max_cost = kMaxArcCost});
    EXPECT_EQ(CostScalingSolveAndCompare(problem), McmfOutcome::kOptimal)
        << seed;
  }
  // Potentials spread over 2^44.3 in original units, 2^58.6 scaled. (Its
  // optimum is plain; LEMON's NetworkSimplex takes seconds on long paths.)
  const McmfProblem path = ExpensivePath(20'000, 1);
  const absl::StatusOr<McmfSolution> solution = CostScaling().Solve(path);
  ASSERT_THAT(solution, IsOk());
  EXPECT_EQ(solution->outcome, McmfOutcome::kOptimal);
  EXPECT_EQ(solution->total_cost, kMaxArcCost * 19'999);
  EXPECT_THAT(CheckOptimalFlow(path, *solution), IsOk());
}

TEST(CostScalingTest, PricesBeyondTheFloorAreAnError) {
  // 40,000 nodes: the potentials spread over 2^45.3, 2^60.6 scaled.
  EXPECT_THAT(CostScaling().Solve(ExpensivePath(40'000, 1)),
              StatusIs(absl::StatusCode::kOutOfRange, "2^60"));
}

TEST(CostScalingTest, LargeButRepresentableNumbers) {
  McmfProblem problem;
  problem.node_count = 3;
  problem.supply = {kMaxArcCapacity, 0, -kMaxArcCapacity};
  problem.arcs = {
      {.src = 0, .dst = 1, .capacity = kMaxArcCapacity, .cost = 1000},
      {.src = 1, .dst = 2, .capacity = int64_t{1} << 30, .cost = -kMaxArcCost},
      {.src = 1, .dst = 2, .capacity = kMaxArcCapacity, .cost = 5},
      {.src = 0, .dst = 2, .capacity = kMaxArcCapacity, .cost = 2000}};
  CostScalingSolveAndCompare(problem);
}

TEST(CostScalingTest, Deterministic) {
  testgen::ExpectDeterministic([](const McmfProblem& problem, uint64_t) {
    return CostScaling().Solve(problem);
  });
}

// Correctness must not depend on the tuning knobs: vary them with the seed.
CostScalingOptions CostScalingOptionsForSeed(uint64_t seed) {
  CostScalingOptions options;
  options.alpha = 2 + static_cast<int64_t>(seed % 4) * 5;
  options.global_update_frequency =
      seed % 7 == 0 ? 0.0 : 0.5 * static_cast<double>(seed % 3);
  options.price_refinement = seed % 5 != 1;
  return options;
}

// The shared property tests (solver_conformance.h).
const testgen::SolveFn kCostScalingSolve = [](const McmfProblem& problem,
                                              uint64_t seed) {
  return CostScaling(CostScalingOptionsForSeed(seed)).Solve(problem);
};

TEST(CostScalingTest, CornerCases) {
  testgen::ExpectCornerCasesSolved(kCostScalingSolve);
}

TEST(CostScalingTest, MatchesLemonOnRandomFeasibleNetworks) {
  testgen::ExpectMatchesLemonOnRandomFeasibleNetworks(kCostScalingSolve);
}

TEST(CostScalingTest, MatchesLemonFeasibilityOnRandomSupplies) {
  testgen::ExpectMatchesLemonFeasibilityOnRandomSupplies(kCostScalingSolve);
}

TEST(CostScalingTest, MatchesLemonOnSchedulingNetworks) {
  testgen::ExpectMatchesLemonOnSchedulingNetworks(kCostScalingSolve);
}

TEST(CostScalingTest, MatchesLemonOnCappedSchedulingNetworks) {
  testgen::ExpectMatchesLemonOnCappedSchedulingNetworks(kCostScalingSolve);
}

TEST(CostScalingTest, MatchesLemonOnLargeSchedulingNetwork) {
  testgen::ExpectMatchesLemonOnLargeSchedulingNetwork(kCostScalingSolve);
}

TEST(CostScalingTest, MatchesLemonOnChains) {
  testgen::ExpectMatchesLemonOnChains(kCostScalingSolve);
}

TEST(CostScalingTest, SolveFromFallsBackOnSizeMismatch) {
  const McmfProblem problem = testgen::SchedulingNetwork(
      3, {.task_count = 100, .job_count = 3, .machine_count = 10});
  CostScaling solver;
  ExpectCostScalingMatchesLemon(problem, solver.SolveFrom(problem, {1, 2}, {}));
}

TEST(CostScalingTest, SolveFromArbitraryStart) {
  // Garbage flow and potentials (out of bounds, huge) only cost time.
  for (uint64_t seed = 0; seed < 40; ++seed) {
    SCOPED_TRACE(seed);
    testgen::RandomNetworkOptions options;
    options.node_count = 30;
    options.arc_count = 120;
    const McmfProblem problem = testgen::RandomFeasibleNetwork(seed, options);
    std::mt19937_64 rng(seed);
    std::vector<int64_t> flow(problem.arcs.size());
    std::vector<int64_t> potentials(problem.node_count);
    for (int64_t& f : flow) f = static_cast<int64_t>(rng() % 41) - 10;
    for (int64_t& p : potentials) {
      p = seed % 2 == 0 ? static_cast<int64_t>(rng() % 2001) - 1000
                        : static_cast<int64_t>(rng() >> 2) - (int64_t{1} << 61);
    }
    ExpectCostScalingMatchesLemon(
        problem, CostScaling().SolveFrom(problem, flow, potentials));
  }
}

// A scheduling network whose first `present` tasks exist (supply 1); the
// other task nodes are pre-allocated with supply 0 so that tasks can come
// and go without changing the node and arc indexing.
struct IncrementalNetwork {
  McmfProblem problem;
  uint32_t tasks = 0;
  uint32_t sink = 0;
  std::vector<uint8_t> present;
  std::vector<int64_t> base_capacity;

  void SetPresent(uint32_t t, bool on) {
    if (present[t] == on) return;
    present[t] = on;
    problem.supply[t] = on ? 1 : 0;
    problem.supply[sink] += on ? -1 : 1;
  }
};

IncrementalNetwork MakeIncremental(uint64_t seed,
                                   const testgen::SchedulingOptions& options,
                                   double present_fraction) {
  IncrementalNetwork net;
  net.problem = testgen::SchedulingNetwork(seed, options);
  net.tasks = options.task_count;
  net.sink = net.problem.node_count - 1;
  net.present.assign(net.tasks, 1);
  for (const McmfArc& arc : net.problem.arcs) {
    net.base_capacity.push_back(arc.capacity);
  }
  std::mt19937_64 rng(seed);
  for (uint32_t t = 0; t < net.tasks; ++t) {
    if (static_cast<double>(rng() % 1000) >= present_fraction * 1000) {
      net.SetPresent(t, false);
    }
  }
  return net;
}

TEST(CostScalingTest, SolveFromMatchesFromScratchOverIncrementalChanges) {
  const testgen::SchedulingOptions options{.task_count = 400,
                                           .job_count = 6,
                                           .machine_count = 40,
                                           .rack_count = 4,
                                           .utilisation = 0.9,
                                           .max_preferences = 4};
  IncrementalNetwork net = MakeIncremental(11, options, 0.7);
  const uint32_t first_job = net.tasks;
  const uint32_t job_end = first_job + options.job_count;
  CostScaling solver;
  absl::StatusOr<McmfSolution> previous = solver.Solve(net.problem);
  ASSERT_THAT(previous, IsOk());
  std::mt19937_64 rng(99);
  auto pick = [&rng](size_t n) { return static_cast<size_t>(rng() % n); };
  for (int batch = 0; batch < 220; ++batch) {
    SCOPED_TRACE(batch);
    const int kind = batch % 5;
    // Task churn: every batch removes and adds a few tasks.
    for (int i = 0; i < 1 + batch % 8; ++i) {
      net.SetPresent(static_cast<uint32_t>(pick(net.tasks)), false);
      net.SetPresent(static_cast<uint32_t>(pick(net.tasks)), true);
    }
    for (int i = 0; i < 6; ++i) {
      const size_t a = pick(net.problem.arcs.size());
      McmfArc& arc = net.problem.arcs[a];
      // Arcs into and out of the unscheduled aggregators keep their
      // capacity so every batch stays feasible; everything else may change.
      const bool aggregator = (arc.src >= first_job && arc.src < job_end) ||
                              (arc.dst >= first_job && arc.dst < job_end);
      if (kind == 0 || kind == 3) {
        arc.cost = static_cast<int64_t>(pick(900)) - (kind == 3 ? 50 : 0);
      } else if (kind == 1 && !aggregator) {
        arc.capacity = static_cast<int64_t>(
            pick(static_cast<size_t>(2 * net.base_capacity[a] + 1)));
      } else if (kind == 2 && !aggregator) {
        arc.capacity = 0;  // e.g. a machine that failed
      } else if (kind == 4 && !aggregator) {
        arc.capacity = net.base_capacity[a];
        arc.cost = static_cast<int64_t>(pick(300));
      }
    }
    absl::StatusOr<McmfSolution> warm =
        solver.SolveFrom(net.problem, previous->flow, previous->potentials);
    const McmfSolution checked =
        ExpectCostScalingMatchesLemon(net.problem, warm);
    ASSERT_EQ(checked.outcome, McmfOutcome::kOptimal);
    absl::StatusOr<McmfSolution> cold = solver.Solve(net.problem);
    ASSERT_THAT(cold, IsOk());
    EXPECT_EQ(warm->total_cost, cold->total_cost);
    previous = warm;
  }
}

// Firmament figure 9: a load-spreading cluster (convex X -> machine arcs)
// already running tasks, and one new job of `new_tasks` tasks contending for
// the remaining slots.
McmfProblem LoadSpreadingNetwork(uint32_t machines, int64_t slots,
                                 uint32_t new_tasks, bool new_job_submitted) {
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
    problem.supply[t] = new_job_submitted ? 1 : 0;
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
  problem.supply[sink] =
      -(total_running + (new_job_submitted ? int64_t{new_tasks} : 0));
  return problem;
}

TEST(CostScalingTest, ContendedLoadSpreadingNewJob) {
  const McmfProblem before = LoadSpreadingNetwork(400, 12, 5000, false);
  const McmfProblem after = LoadSpreadingNetwork(400, 12, 5000, true);
  CostScaling solver;
  const McmfSolution base =
      ExpectCostScalingMatchesLemon(before, solver.Solve(before));
  ASSERT_EQ(base.outcome, McmfOutcome::kOptimal);
  const McmfSolution cold =
      ExpectCostScalingMatchesLemon(after, solver.Solve(after));
  const McmfSolution warm = ExpectCostScalingMatchesLemon(
      after, solver.SolveFrom(after, base.flow, base.potentials));
  EXPECT_EQ(cold.total_cost, warm.total_cost);
}

}  // namespace
}  // namespace flowsched::solver
