#include "tools/bench/scheduling_networks.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/solver/cost_scaling.h"
#include "services/solver/flow_checker.h"
#include "services/solver/incremental_solver.h"
#include "services/solver/lemon_reference.h"
#include "services/solver/problem_validator.h"
#include "services/solver/relaxation.h"
#include "services/solver/successive_shortest_path.h"

namespace flowsched::bench {
namespace {

using ::flowsched::testing::IsOk;
using solver::McmfArc;
using solver::McmfProblem;

bool SameArc(const McmfArc& a, const McmfArc& b) {
  return a.src == b.src && a.dst == b.dst && a.capacity == b.capacity &&
         a.cost == b.cost;
}

// SSP's result is certified and its cost equals LEMON NetworkSimplex's.
void ExpectSolvesLikeLemon(const McmfProblem& problem) {
  ASSERT_THAT(solver::ValidateProblem(problem), IsOk());
  const absl::StatusOr<solver::McmfSolution> solution =
      solver::SuccessiveShortestPath().Solve(problem);
  ASSERT_THAT(solution, IsOk());
  ASSERT_EQ(solution->outcome, solver::McmfOutcome::kOptimal);
  EXPECT_THAT(solver::CheckOptimalFlow(problem, *solution), IsOk());
  const solver::testgen::LemonResult lemon =
      solver::testgen::SolveWithLemon(problem);
  ASSERT_EQ(lemon.outcome, solver::McmfOutcome::kOptimal);
  EXPECT_EQ(solution->total_cost, lemon.total_cost);
}

TEST(SchedulingNetworksTest, QuincyShapeAndSolvable) {
  for (const double load : {0.5, 0.9, 0.97, 1.1}) {
    ClusterNetwork network({.machines = 60, .utilisation = load, .seed = 3});
    const McmfProblem& problem = network.problem();
    const auto tasks = static_cast<int64_t>(network.live_tasks());
    EXPECT_EQ(tasks, std::llround(load * 60 * 12));
    EXPECT_EQ(problem.supply[0], -tasks);  // the sink
    // Every task has U, X, 2-7 preferences and, if running, its machine.
    EXPECT_GE(network.live_arcs(), size_t(tasks) * 4);
    EXPECT_LE(network.live_arcs(), size_t(tasks) * 10 + 200);
    ExpectSolvesLikeLemon(problem);
  }
}

TEST(SchedulingNetworksTest, LoadSpreadingShapeAndSolvable) {
  for (const double load : {0.5, 0.97, 1.1}) {
    ClusterNetwork network({.shape = NetworkShape::kLoadSpreading,
                            .machines = 60,
                            .utilisation = load,
                            .seed = 4});
    const McmfProblem& problem = network.problem();
    // Two arcs per task, slots_per_machine pieces and a sink arc per
    // machine, one sink arc per job.
    const size_t jobs = problem.node_count - 2 - 60 - network.live_tasks();
    EXPECT_EQ(problem.arcs.size(),
              2 * size_t{network.live_tasks()} + 60 * 13 + jobs);
    ExpectSolvesLikeLemon(problem);
  }
  ExpectSolvesLikeLemon(ContendedLoadSpreadingNetwork(40, 0.97, 100, 5));
}

TEST(SchedulingNetworksTest, Deterministic) {
  const ClusterShape shape{.machines = 30, .seed = 9};
  const McmfProblem a = QuincyNetwork(shape);
  const McmfProblem b = QuincyNetwork(shape);
  ASSERT_EQ(a.arcs.size(), b.arcs.size());
  EXPECT_EQ(a.supply, b.supply);
  for (size_t i = 0; i < a.arcs.size(); ++i) {
    EXPECT_TRUE(SameArc(a.arcs[i], b.arcs[i])) << i;
  }
}

// cost_scale draws the same network and multiplies every cost, so the
// optimum's cost scales with it.
TEST(SchedulingNetworksTest, CostScaleMultipliesEveryCost) {
  for (const NetworkShape shape :
       {NetworkShape::kQuincy, NetworkShape::kLoadSpreading}) {
    const ClusterShape base{.shape = shape, .machines = 40, .seed = 9};
    ClusterShape scaled = base;
    scaled.cost_scale = 1000;
    const McmfProblem a = ClusterNetwork(base).problem();
    const McmfProblem b = ClusterNetwork(scaled).problem();
    ASSERT_EQ(a.arcs.size(), b.arcs.size());
    ASSERT_EQ(a.supply, b.supply);
    for (size_t i = 0; i < a.arcs.size(); ++i) {
      McmfArc expected = a.arcs[i];
      expected.cost *= 1000;
      ASSERT_TRUE(SameArc(expected, b.arcs[i])) << "arc " << i;
    }
    const solver::testgen::LemonResult lemon_a =
        solver::testgen::SolveWithLemon(a);
    const solver::testgen::LemonResult lemon_b =
        solver::testgen::SolveWithLemon(b);
    EXPECT_EQ(lemon_b.total_cost, 1000 * lemon_a.total_cost);
    ExpectSolvesLikeLemon(b);
  }
}

// Each task has between min_preferences and max_preferences preference
// arcs (besides U and X), and both bounds are reached.
TEST(SchedulingNetworksTest, PreferenceArcsStayInTheirRange) {
  const std::vector<std::pair<uint32_t, uint32_t>> ranges = {
      {0, 0}, {0, 10}, {4, 4}, {3, 9}};
  for (const auto& [lo, hi] : ranges) {
    ClusterNetwork network({.machines = 80,
                            .running_fraction = 0,
                            .min_preferences = lo,
                            .max_preferences = hi,
                            .seed = 5});
    const McmfProblem& problem = network.problem();
    // Every task waits, so each has U, X and its preferences, nothing else.
    std::vector<uint32_t> out_arcs(static_cast<size_t>(problem.node_count), 0);
    for (const McmfArc& arc : problem.arcs) {
      if (problem.supply[static_cast<size_t>(arc.src)] == 1) {
        ++out_arcs[static_cast<size_t>(arc.src)];
      }
    }
    uint32_t fewest = UINT32_MAX;
    uint32_t most = 0;
    for (size_t node = 0; node < out_arcs.size(); ++node) {
      if (problem.supply[node] != 1) continue;
      fewest = std::min(fewest, out_arcs[node] - 2);
      most = std::max(most, out_arcs[node] - 2);
    }
    EXPECT_EQ(fewest, lo);
    EXPECT_EQ(most, hi);
    ExpectSolvesLikeLemon(problem);
  }
}

// Job sizes: every distribution gives jobs of at least one task whose mean
// is near mean_tasks_per_job (the heavy tail within a factor of two).
TEST(SchedulingNetworksTest, JobSizeDistributionsKeepTheirMean) {
  for (const JobSizes sizes : {JobSizes::kUniform, JobSizes::kGeometric,
                               JobSizes::kHeavyTailed, JobSizes::kFixed}) {
    ClusterNetwork network({.machines = 2000,
                            .slots_per_machine = 10,
                            .utilisation = 1.0,
                            .mean_tasks_per_job = 20,
                            .job_sizes = sizes,
                            .seed = 11});
    // Job nodes are the U nodes: supply 0, an arc to the sink (0) whose
    // capacity is the job's task count.
    const McmfProblem& problem = network.problem();
    std::vector<int64_t> jobs;
    for (const McmfArc& arc : problem.arcs) {
      if (arc.dst == 0 && arc.src >= 2 + 2000 / 40 + 2000 && arc.capacity > 0) {
        jobs.push_back(arc.capacity);
      }
    }
    ASSERT_FALSE(jobs.empty());
    double sum = 0;
    for (const int64_t size : jobs) {
      ASSERT_GE(size, 1);
      sum += static_cast<double>(size);
    }
    const double mean = sum / static_cast<double>(jobs.size());
    SCOPED_TRACE(JobSizesName(sizes));
    if (sizes == JobSizes::kHeavyTailed) {
      EXPECT_GT(mean, 10);
      EXPECT_LT(mean, 40);
      EXPECT_GT(*std::max_element(jobs.begin(), jobs.end()), 200);
    } else {
      EXPECT_NEAR(mean, 20, 2);
    }
  }
}

TEST(SchedulingNetworksTest, FullScaleQuincyHasAboutAMillionArcs) {
  ClusterNetwork network({.machines = 12'500, .utilisation = 0.97});
  EXPECT_GE(network.problem().arcs.size(), 1'000'000u);
  EXPECT_LE(network.problem().arcs.size(), 1'500'000u);
  EXPECT_EQ(network.live_tasks(), 145'500u);
}

// Between snapshots, indices outside the round's change lists keep their
// arcs and supplies; every snapshot solves correctly.
TEST(SchedulingNetworksTest, IncrementalSequenceKeepsIndicesStable) {
  for (const auto starts : {IncrementalOptions::StartModel::kFollowOptimum,
                            IncrementalOptions::StartModel::kRandomFreeSlot})
    for (const NetworkShape shape :
         {NetworkShape::kQuincy, NetworkShape::kLoadSpreading}) {
      ClusterNetwork network(
          {.shape = shape, .machines = 40, .utilisation = 0.9, .seed = 11},
          {.min_change = 0.01,
           .max_change = 0.04,
           .machine_failure_probability = 0.5,
           .starts = starts});
      int started = 0;
      int failures = 0;
      for (int round = 0; round < 12; ++round) {
        const McmfProblem before = network.problem();
        const RoundChanges changes = network.NextRound();
        const McmfProblem& after = network.problem();
        if (changes.failed_machine >= 0) ++failures;
        started += static_cast<int>(changes.starts);
        EXPECT_GT(changes.arrivals, 0u);
        ASSERT_GE(after.node_count, before.node_count);
        ASSERT_GE(after.arcs.size(), before.arcs.size());
        for (uint32_t v = 0; v < before.node_count; ++v) {
          if (!std::binary_search(changes.changed_nodes.begin(),
                                  changes.changed_nodes.end(), v)) {
            EXPECT_EQ(before.supply[v], after.supply[v]) << "node " << v;
          }
        }
        size_t unchanged = 0;
        for (uint32_t a = 0; a < before.arcs.size(); ++a) {
          if (!std::binary_search(changes.changed_arcs.begin(),
                                  changes.changed_arcs.end(), a)) {
            EXPECT_TRUE(SameArc(before.arcs[a], after.arcs[a])) << "arc " << a;
            ++unchanged;
          }
        }
        // Only a few percent of the network changes per round.
        EXPECT_GT(unchanged, before.arcs.size() / 2);
        ExpectSolvesLikeLemon(after);
      }
      EXPECT_GT(failures, 0);
      EXPECT_GT(started, 0);
    }
}

// IncrementalOptions::kFollowOptimum: a task starts where an optimum of the
// previous round's network sends its unit (the same deterministic solvers
// the generator uses), and a Quincy task keeps its preference arcs. Machine
// failures are off so that every new arc out of an old task is a start.
TEST(SchedulingNetworksTest, StartsFollowThePreviousOptimum) {
  for (const NetworkShape shape :
       {NetworkShape::kQuincy, NetworkShape::kLoadSpreading}) {
    const bool quincy = shape == NetworkShape::kQuincy;
    constexpr uint32_t kMachines = 80;
    ClusterNetwork network(
        {.shape = shape, .machines = kMachines, .utilisation = 0.9, .seed = 5},
        {.min_change = 0.02,
         .max_change = 0.02,
         .machine_failure_probability = 0});
    // Node layout (scheduling_networks.h): sink, X, racks of 40, machines.
    const uint32_t racks = quincy ? 2 : 0;
    const uint32_t first_machine = 2 + racks;
    int checked = 0;
    for (int round = 0; round < 6; ++round) {
      const McmfProblem before = network.problem();
      const absl::StatusOr<solver::McmfSolution> optimum =
          quincy ? solver::Relaxation().Solve(before)
                 : solver::CostScaling().Solve(before);
      ASSERT_THAT(optimum, IsOk());
      ASSERT_EQ(optimum->outcome, solver::McmfOutcome::kOptimal);
      const RoundChanges changes = network.NextRound();
      const McmfProblem& after = network.problem();
      uint32_t starts = 0;
      for (const uint32_t a : changes.changed_arcs) {
        const McmfArc& arc = after.arcs[a];
        const uint32_t task = arc.src;
        const bool old_task =
            task < before.node_count && before.supply[task] == 1 &&
            after.supply[task] == 1 &&
            !std::binary_search(changes.changed_nodes.begin(),
                                changes.changed_nodes.end(), task);
        if (!old_task || arc.capacity == 0 || arc.dst < first_machine ||
            arc.dst >= first_machine + kMachines) {
          continue;
        }
        ++starts;
        // Where the optimum sent the task's unit.
        int routed = 0;
        for (uint32_t b = 0; b < before.arcs.size(); ++b) {
          if (before.arcs[b].src != task || optimum->flow[b] == 0) continue;
          ++routed;
          const uint32_t dst = before.arcs[b].dst;
          if (dst >= first_machine) {
            EXPECT_EQ(dst, arc.dst) << "round " << round;
          } else if (dst >= 2) {
            EXPECT_EQ((arc.dst - first_machine) / 40, dst - 2);  // its rack
          } else {
            ASSERT_EQ(dst, 1u);  // X: a machine X (or its rack) fed
            uint64_t fed = 0;
            for (uint32_t c = 0; c < before.arcs.size(); ++c) {
              const McmfArc& feed = before.arcs[c];
              const bool into_machine =
                  quincy ? feed.dst == arc.dst && feed.src >= 2 &&
                               feed.src < first_machine
                         : feed.dst == arc.dst && feed.src == 1;
              if (into_machine) fed += static_cast<uint64_t>(optimum->flow[c]);
            }
            EXPECT_GT(fed, 0u) << "round " << round;
          }
        }
        EXPECT_EQ(routed, 1) << "a started task was unscheduled";
        if (quincy) {
          // Its preferences stay: every arc it had keeps its slot.
          for (uint32_t b = 0; b < before.arcs.size(); ++b) {
            if (before.arcs[b].src == task) {
              EXPECT_TRUE(SameArc(before.arcs[b], after.arcs[b])) << b;
            }
          }
        }
        ++checked;
      }
      EXPECT_EQ(starts, changes.starts) << ShapeName(shape) << " " << round;
      EXPECT_GT(changes.starts, 0u);
    }
    EXPECT_GT(checked, 20) << ShapeName(shape);
  }
}

// The benchmark's incremental sequences through IncrementalSolver the way
// the benchmark's runner drives it: the whole network once, a cold solve by
// cost scaling installed, then only each round's changed nodes and arcs
// (node ids reused without RemoveNode). Every round is certified and costs
// what LEMON's from-scratch optimum costs. On load spreading a round needs
// about one Dijkstra phase (the blocking flow rescans sources an earlier
// root's DFS marked dead; see IncrementalSolver::BlockingFlow).
TEST(SchedulingNetworksTest, IncrementalSolverFollowsSequences) {
  for (const NetworkShape shape :
       {NetworkShape::kQuincy, NetworkShape::kLoadSpreading}) {
    ClusterNetwork network(
        {.shape = shape, .machines = 150, .utilisation = 0.9, .seed = 3},
        {.min_change = 0.01,
         .max_change = 0.01,
         .machine_failure_probability = 0.2});
    const McmfProblem& problem = network.problem();
    solver::IncrementalSolver incremental;
    for (uint32_t v = 0; v < problem.node_count; ++v) {
      ASSERT_THAT(incremental.SetSupply(v, problem.supply[v]), IsOk());
    }
    for (uint32_t a = 0; a < problem.arcs.size(); ++a) {
      const McmfArc& arc = problem.arcs[a];
      ASSERT_THAT(
          incremental.SetArc(a, arc.src, arc.dst, arc.capacity, arc.cost),
          IsOk());
    }
    const absl::StatusOr<solver::McmfSolution> cold =
        solver::CostScaling().Solve(problem);
    ASSERT_THAT(cold, IsOk());
    ASSERT_THAT(incremental.InstallSolution(cold->flow, cold->potentials),
                IsOk());
    uint64_t dijkstra_runs = 0;
    constexpr int kRounds = 15;
    for (int round = 0; round < kRounds; ++round) {
      const RoundChanges changes = network.NextRound();
      for (uint32_t v : changes.changed_nodes) {
        ASSERT_THAT(incremental.SetSupply(v, problem.supply[v]), IsOk());
      }
      for (uint32_t a : changes.changed_arcs) {
        const McmfArc& arc = problem.arcs[a];
        ASSERT_THAT(
            incremental.SetArc(a, arc.src, arc.dst, arc.capacity, arc.cost),
            IsOk());
      }
      const absl::StatusOr<solver::IncrementalResult> result =
          incremental.Solve();
      ASSERT_THAT(result, IsOk());
      ASSERT_EQ(result->outcome, solver::McmfOutcome::kOptimal);
      dijkstra_runs += result->stats.dijkstra_runs;
      McmfProblem exported;
      solver::McmfSolution solution;
      std::vector<uint32_t> handles;
      incremental.Export(exported, solution, handles);
      EXPECT_THAT(solver::CheckOptimalFlow(exported, solution), IsOk());
      const solver::testgen::LemonResult lemon =
          solver::testgen::SolveWithLemon(problem);
      ASSERT_EQ(lemon.outcome, solver::McmfOutcome::kOptimal);
      EXPECT_EQ(result->total_cost, lemon.total_cost)
          << ShapeName(shape) << " round " << round;
    }
    if (shape == NetworkShape::kLoadSpreading) {
      // 14 here; 21 when the blocking flow skipped sources an earlier DFS
      // had marked dead, and far more at 12,500 machines.
      EXPECT_LE(dijkstra_runs, uint64_t{kRounds} * 6 / 5);
    }
    std::printf("%s: %llu Dijkstra runs over %d rounds\n",
                ShapeName(shape).c_str(),
                static_cast<unsigned long long>(dijkstra_runs), kRounds);
  }
}

}  // namespace
}  // namespace flowsched::bench
