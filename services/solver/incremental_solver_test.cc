#include "services/solver/incremental_solver.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/solver/cost_scaling.h"
#include "services/solver/flow_checker.h"
#include "services/solver/incremental_check_testutil.h"
#include "services/solver/incremental_sim_testutil.h"
#include "services/solver/lemon_reference.h"
#include "services/solver/problem_validator.h"

namespace flowsched::solver {
namespace {

using testgen::OptionsVariant;
using testgen::SolveAndCheck;

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

// (a) Scheduling-shaped networks through >= 1,000 random change batches
// each, for every combination of the six tuning options.
class SchedulingSequenceTest : public ::testing::TestWithParam<int> {};

TEST_P(SchedulingSequenceTest, EveryBatchIsOptimal) {
  const int variant = GetParam();
  int infeasible = 0;
  int batches = 0;
  int64_t paired = 0;  // units routed by the pairing passes
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    IncrementalSolver solver(OptionsVariant(variant));
    testgen::SimOptions options{
        .machine_count = 12,
        .rack_count = 3,
        .job_count = 4,
        .initial_tasks = 40,
        .utilisation = 0.5 + 0.1 * static_cast<double>(seed)};
    testgen::SchedulingSim sim(seed * 7919 + static_cast<uint64_t>(variant),
                               options, solver);
    ASSERT_THAT(sim.Build(), IsOk());
    ASSERT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
    for (int batch = 0; batch < 300; ++batch) {
      // Sometimes leave too little unscheduled capacity, which makes rounds
      // infeasible when machines fail; later rounds must recover.
      if (batch % 50 == 25) sim.SetUnscheduledFraction(0.3);
      if (batch % 50 == 30) {
        for (int m = 0; m < 3; ++m) sim.FailRandomMachine();
      }
      if (batch % 50 == 35) sim.SetUnscheduledFraction(1.0);
      const int events = static_cast<int>(sim.Int(1, 12));
      for (int e = 0; e < events; ++e) sim.RandomEvent();
      ASSERT_THAT(sim.status(), IsOk());
      IncrementalStats stats;
      if (SolveAndCheck(solver, &stats) == McmfOutcome::kInfeasible) {
        ++infeasible;
      }
      paired += stats.paired_units;
      ++batches;
      if (::testing::Test::HasFailure()) {
        FAIL() << "seed " << seed << " batch " << batch;
      }
    }
  }
  EXPECT_GE(batches, 1000);
  EXPECT_GT(infeasible, 0);
  EXPECT_LT(infeasible, batches / 2);
  // The variants with the pairing passes exercise them.
  if (OptionsVariant(variant).pair_through_sink) {
    EXPECT_GT(paired, 0);
  } else {
    EXPECT_EQ(paired, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, SchedulingSequenceTest,
                         ::testing::Range(0, 64));

TEST(IncrementalSolverTest, LargerSchedulingSequence) {
  IncrementalSolver solver;
  testgen::SimOptions options{.machine_count = 200,
                              .rack_count = 10,
                              .job_count = 20,
                              .initial_tasks = 2000,
                              .utilisation = 0.85};
  testgen::SchedulingSim sim(99, options, solver);
  ASSERT_THAT(sim.Build(), IsOk());
  ASSERT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  for (int batch = 0; batch < 60; ++batch) {
    for (int e = 0; e < 20; ++e) {
      sim.AddTask();
      sim.RemoveRandomTask();
    }
    for (int e = 0; e < 10; ++e) sim.RandomEvent();
    ASSERT_THAT(sim.status(), IsOk());
    SolveAndCheck(solver);
    if (HasFailure()) FAIL() << "batch " << batch;
  }
}

// A cold start solved by cost scaling and installed, then repaired
// incrementally: every later batch is still optimal. A solution that is not
// optimal is refused and changes nothing.
TEST(IncrementalSolverTest, InstalledColdStartIsRepairedIncrementally) {
  IncrementalSolver solver;
  testgen::SimOptions options{.machine_count = 60,
                              .rack_count = 6,
                              .job_count = 10,
                              .initial_tasks = 500,
                              .utilisation = 0.9};
  testgen::SchedulingSim sim(17, options, solver);
  ASSERT_THAT(sim.Build(), IsOk());
  McmfProblem problem;
  McmfSolution unused;
  std::vector<uint32_t> handles;
  solver.Export(problem, unused, handles);
  CostScaling cold;
  auto solved = cold.Solve(problem);
  ASSERT_THAT(solved, IsOk());
  ASSERT_EQ(solved->outcome, McmfOutcome::kOptimal);
  std::vector<int64_t> by_handle(handles.empty() ? 0 : handles.back() + 1, 0);
  for (size_t i = 0; i < handles.size(); ++i) {
    by_handle[handles[i]] = solved->flow[i];
  }
  // A perturbed flow breaks conservation and is refused.
  std::vector<int64_t> broken = by_handle;
  for (size_t i = 0; i < handles.size(); ++i) {
    if (broken[handles[i]] > 0) {
      --broken[handles[i]];
      break;
    }
  }
  EXPECT_THAT(solver.InstallSolution(broken, solved->potentials),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  ASSERT_THAT(solver.InstallSolution(by_handle, solved->potentials), IsOk());
  auto first = solver.Solve();
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(first->total_cost, solved->total_cost);
  EXPECT_EQ(first->stats.dijkstra_runs, 0u);  // nothing left to repair
  for (int batch = 0; batch < 40; ++batch) {
    for (int e = 0; e < 8; ++e) sim.RandomEvent();
    ASSERT_THAT(sim.status(), IsOk());
    SolveAndCheck(solver);
    if (HasFailure()) FAIL() << "batch " << batch;
  }
}

// Finishing one task must be repaired by the local drain walk alone: one
// unit from the sink back along the machine's flow, no Dijkstra.
TEST(IncrementalSolverTest, TaskCompletionDrainsWithoutDijkstra) {
  IncrementalSolver solver;
  testgen::SimOptions options{.machine_count = 50,
                              .rack_count = 5,
                              .job_count = 5,
                              .initial_tasks = 300,
                              .utilisation = 0.6,
                              .max_preferences = 0};
  testgen::SchedulingSim sim(5, options, solver);
  ASSERT_THAT(sim.Build(), IsOk());
  ASSERT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  int without_dijkstra = 0;
  for (int i = 0; i < 20; ++i) {
    sim.RemoveRandomTask();
    absl::StatusOr<IncrementalResult> result = solver.Solve();
    ASSERT_THAT(result, IsOk());
    ASSERT_EQ(result->outcome, McmfOutcome::kOptimal);
    if (result->stats.dijkstra_runs == 0) ++without_dijkstra;
    McmfProblem problem;
    McmfSolution solution;
    std::vector<uint32_t> handles;
    solver.Export(problem, solution, handles);
    ASSERT_THAT(CheckOptimalFlow(problem, solution), IsOk());
  }
  // Without preference arcs no waiting task can profit from the freed slot,
  // so a completion is a pure drain unless the machine -> sink arc is
  // saturated with a strictly negative reduced cost (then the return path
  // is not zero-cost and Dijkstra must price it).
  EXPECT_GE(without_dijkstra, 15);
}

// Solves, expects an optimum of `cost` that passes the checker and equals
// LEMON's, and returns the round's counters.
IncrementalStats SolveToCost(IncrementalSolver& solver, int64_t cost) {
  absl::StatusOr<IncrementalResult> result = solver.Solve();
  EXPECT_THAT(result, IsOk());
  if (!result.ok()) return {};
  EXPECT_EQ(result->outcome, McmfOutcome::kOptimal);
  EXPECT_EQ(result->total_cost, cost);
  McmfProblem problem;
  McmfSolution solution;
  std::vector<uint32_t> handles;
  solver.Export(problem, solution, handles);
  EXPECT_THAT(CheckOptimalFlow(problem, solution), IsOk());
  EXPECT_EQ(testgen::SolveWithLemon(problem).total_cost, result->total_cost);
  return result->stats;
}

// A job of new tasks, each of which prefers its own free machine at its own
// cost: the tasks reach the sink at 40 different distances. A Dijkstra from
// the tasks prices only the nearest one per phase; one grown back from the
// sink prices them all, and the blocking flow then routes the whole job.
IncrementalStats PlaceJobWithDistinctCosts(IncrementalOptions options) {
  constexpr uint32_t kSink = 0;
  constexpr uint32_t kCluster = 1;
  constexpr uint32_t kMachines = 60;
  constexpr uint32_t kTasks = 40;
  IncrementalSolver solver(options);
  uint32_t handle = 0;
  EXPECT_THAT(solver.SetSupply(kSink, 0), IsOk());
  EXPECT_THAT(solver.SetSupply(kCluster, 0), IsOk());
  for (uint32_t m = 0; m < kMachines; ++m) {
    const uint32_t machine = 2 + m;
    EXPECT_THAT(solver.SetSupply(machine, 0), IsOk());
    EXPECT_THAT(solver.SetArc(handle++, kCluster, machine, 1, 0), IsOk());
    EXPECT_THAT(solver.SetArc(handle++, machine, kSink, 1, 0), IsOk());
  }
  // The tasks exist (supply 0) before they become runnable, so their
  // potentials are old and their arcs' costs move them apart: fresh nodes
  // would be priced with their cheapest arc at reduced cost 0.
  const uint32_t first_task = 2 + kMachines;
  const uint32_t first_task_arc = handle;
  for (uint32_t t = 0; t < kTasks; ++t) {
    const uint32_t task = first_task + t;
    EXPECT_THAT(solver.SetSupply(task, 0), IsOk());
    EXPECT_THAT(solver.SetArc(handle++, task, 2 + t, 1, 0), IsOk());
    EXPECT_THAT(solver.SetArc(handle++, task, kCluster, 1, 1000), IsOk());
  }
  EXPECT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  for (uint32_t t = 0; t < kTasks; ++t) {
    EXPECT_THAT(
        solver.SetArc(first_task_arc + 2 * t, first_task + t, 2 + t, 1, 10 + t),
        IsOk());
    EXPECT_THAT(solver.SetSupply(first_task + t, 1), IsOk());
  }
  EXPECT_THAT(solver.SetSupply(kSink, -int64_t{kTasks}), IsOk());
  // Every task on its own machine: sum of 10 + t.
  return SolveToCost(solver, int64_t{kTasks} * 10 + kTasks * (kTasks - 1) / 2);
}

TEST(IncrementalSolverTest, JobArrivalIsPricedFromTheSinkInOneSearch) {
  // The search sides of the global phases, without the local re-spreading
  // of the tasks' units or the pairing passes.
  const IncrementalStats automatic = PlaceJobWithDistinctCosts(
      {.rebalance_leaves = false, .pair_through_sink = false});
  EXPECT_EQ(automatic.dijkstra_runs, 1u);
  EXPECT_EQ(automatic.backward_runs, 1u);
  EXPECT_EQ(automatic.augmentations, 40u);
  // Every task reaches the sink over its own machine: the search's tree
  // holds the 40 disjoint paths, so no blocking flow is needed.
  EXPECT_EQ(automatic.tree_augmentations, 40u);
  EXPECT_EQ(automatic.blocking_flows, 0u);
  const IncrementalStats forward = PlaceJobWithDistinctCosts(
      {.search_side = IncrementalOptions::SearchSide::kForward,
       .rebalance_leaves = false,
       .two_sided_search = false,
       .pair_through_sink = false});
  EXPECT_EQ(forward.backward_runs, 0u);
  EXPECT_EQ(forward.dijkstra_runs, 40u);
  // Two-sided phases: the first forward search prices the nearest task;
  // then a backward search prices every other one by its own distance,
  // and the forward search after it leaves all 39 paths admissible.
  const IncrementalStats two_sided = PlaceJobWithDistinctCosts(
      {.search_side = IncrementalOptions::SearchSide::kForward,
       .rebalance_leaves = false,
       .pair_through_sink = false});
  EXPECT_EQ(two_sided.backward_runs, 1u);
  EXPECT_EQ(two_sided.dijkstra_runs, 3u);
  EXPECT_EQ(two_sided.augmentations, 40u);
}

// IncrementalStats::searches lists the searches and blocking flows in the
// order they ran, and agrees with the counters.
TEST(IncrementalSolverTest, SearchRecordsFollowTheRound) {
  const IncrementalStats stats = PlaceJobWithDistinctCosts(
      {.search_side = IncrementalOptions::SearchSide::kForward,
       .rebalance_leaves = false,
       .pair_through_sink = false});
  uint64_t searches = 0;
  uint64_t backward = 0;
  uint64_t settled = 0;
  int64_t flow_paths = 0;
  for (const SearchRecord& record : stats.searches) {
    EXPECT_GE(record.ms, 0);
    if (record.kind == SearchRecord::Kind::kBlockingFlow) {
      flow_paths += record.units;
      continue;
    }
    ++searches;
    if (record.kind == SearchRecord::Kind::kBackward) ++backward;
    settled += record.nodes;
    EXPECT_GT(record.nodes, 0u);  // at least a root
  }
  EXPECT_EQ(searches, stats.dijkstra_runs);
  EXPECT_EQ(backward, stats.backward_runs);
  EXPECT_LE(settled, stats.nodes_touched);
  EXPECT_LE(flow_paths + static_cast<int64_t>(stats.tree_augmentations),
            static_cast<int64_t>(stats.augmentations));
  // The round of the two-sided case above: forward from the 40 tasks (the
  // nearest routed), backward from the sink for the other 39, forward
  // again, whose admissible network routes the 39.
  ASSERT_GE(stats.searches.size(), 3u);
  EXPECT_EQ(stats.searches[0].kind, SearchRecord::Kind::kForward);
  EXPECT_EQ(stats.searches[0].roots, 40u);
  EXPECT_EQ(stats.searches[0].units, 40);
  const auto second =
      std::find_if(stats.searches.begin() + 1, stats.searches.end(),
                   [](const SearchRecord& r) {
                     return r.kind != SearchRecord::Kind::kBlockingFlow;
                   });
  ASSERT_NE(second, stats.searches.end());
  EXPECT_EQ(second->kind, SearchRecord::Kind::kBackward);
  EXPECT_EQ(second->roots, 1u);  // the sink
  EXPECT_EQ(second->units, 39);
  // The tasks' costs 10..49 differ by one each: the backward search ends
  // at the farthest task, 39 above the nearest.
  EXPECT_EQ(second->last_distance, 39);
  EXPECT_EQ(stats.searches.back().kind, SearchRecord::Kind::kBlockingFlow);
  EXPECT_GE(stats.searches.back().units, 1);
}

// A job whose tasks all reach the sink at distance 0, through one
// aggregator and a machine each. Searched back from the sink, the ties
// settle by node id: the first machine, the aggregator, then the tasks
// (ids below the other machines'), and the search is covered before the
// other machines are settled. The blocking flow only sees settled nodes,
// so a search that stops there routes one unit (the first machine's); the
// second search finishes its last distance and routes the rest.
TEST(IncrementalSolverTest, LaterSearchesFinishTheirLastDistance) {
  constexpr uint32_t kTasks = 20;
  constexpr uint32_t kSink = 0;
  constexpr uint32_t kCluster = kTasks + 1;
  IncrementalSolver solver({.drain_arc_budget = 0,
                            .rebalance_leaves = false,
                            .pair_through_sink = false});
  uint32_t handle = 0;
  for (uint32_t v = 0; v <= 2 * kTasks + 1; ++v) {
    EXPECT_THAT(solver.SetSupply(v, 0), IsOk());
  }
  for (uint32_t t = 1; t <= kTasks; ++t) {
    const uint32_t machine = kCluster + t;
    EXPECT_THAT(solver.SetArc(handle++, t, kCluster, 1, 0), IsOk());
    EXPECT_THAT(solver.SetArc(handle++, kCluster, machine, 1, 0), IsOk());
    EXPECT_THAT(solver.SetArc(handle++, machine, kSink, 1, 0), IsOk());
  }
  ASSERT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  for (uint32_t t = 1; t <= kTasks; ++t) {
    EXPECT_THAT(solver.SetSupply(t, 1), IsOk());
  }
  EXPECT_THAT(solver.SetSupply(kSink, -int64_t{kTasks}), IsOk());
  const IncrementalStats stats = SolveToCost(solver, 0);
  EXPECT_EQ(stats.backward_runs, 2u);
  EXPECT_EQ(stats.dijkstra_runs, 2u);
  EXPECT_EQ(stats.augmentations, uint64_t{kTasks});
}

// Two tasks face the sink: one at distance 0 over its machine, the other
// at 10 over its own. The first search (forward) is covered by the sink at
// distance 0 and routes the near task; the far one is then a lone excess
// node, which one backward search prices and routes along its tree path
// (a two-sided phase would add a second search).
TEST(IncrementalSolverTest, LoneExcessIsSearchedForBackwardsOnly) {
  constexpr uint32_t kSink = 0;
  IncrementalSolver solver({.drain_arc_budget = 0,
                            .rebalance_leaves = false,
                            .pair_through_sink = false});
  for (uint32_t v = 0; v < 5; ++v) {
    EXPECT_THAT(solver.SetSupply(v, 0), IsOk());
  }
  // Tasks 1 and 2, machines 3 and 4.
  EXPECT_THAT(solver.SetArc(0, 1, 3, 1, 0), IsOk());
  EXPECT_THAT(solver.SetArc(1, 2, 4, 1, 0), IsOk());
  EXPECT_THAT(solver.SetArc(2, 3, kSink, 1, 0), IsOk());
  EXPECT_THAT(solver.SetArc(3, 4, kSink, 1, 0), IsOk());
  ASSERT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  EXPECT_THAT(solver.SetArc(1, 2, 4, 1, 10), IsOk());
  EXPECT_THAT(solver.SetSupply(1, 1), IsOk());
  EXPECT_THAT(solver.SetSupply(2, 1), IsOk());
  EXPECT_THAT(solver.SetSupply(kSink, -2), IsOk());
  const IncrementalStats stats = SolveToCost(solver, 10);
  EXPECT_EQ(stats.dijkstra_runs, 2u);
  EXPECT_EQ(stats.backward_runs, 1u);
  EXPECT_EQ(stats.tree_augmentations, 2u);
  EXPECT_EQ(stats.blocking_flows, 0u);
}

// A task finishes on a full machine whose return arc to the sink had a
// negative reduced cost (the potentials priced its slot at 50): the sink
// is left with a unit the machine lacks, and the zero-cost return path the
// drain walk looks for does not exist. Every other machine and task sits
// at distance 0 from the sink, the machine at 50: a search from the sink,
// which is adjacent to every machine, settles all of them first; one from
// the machine reaches the sink at once. With `arrival`, a new task comes in
// the same round, preferring the second machine (free) at cost 5: a Quincy
// round in miniature.
IncrementalStats FinishOnFullMachine(IncrementalOptions options,
                                     bool arrival = false) {
  constexpr uint32_t kSink = 0;
  constexpr uint32_t kCluster = 1;
  constexpr uint32_t kMachines = 100;
  constexpr int64_t kTaskToCluster = 60;
  constexpr int64_t kSlotValue = 50;
  IncrementalSolver solver(options);
  uint32_t handle = 0;
  std::vector<int64_t> flow;
  // Published potentials p (rc = cost - p[u] + p[v]): 0 everywhere except
  // the full machine (-50 on its return arc) and the tasks.
  std::vector<int64_t> potentials = {0, 0};
  auto arc = [&](uint32_t u, uint32_t v, int64_t cap, int64_t cost, int64_t f) {
    EXPECT_THAT(solver.SetArc(handle++, u, v, cap, cost), IsOk());
    flow.push_back(f);
  };
  EXPECT_THAT(solver.SetSupply(kSink, 0), IsOk());
  EXPECT_THAT(solver.SetSupply(kCluster, 0), IsOk());
  for (uint32_t m = 0; m < kMachines; ++m) {
    EXPECT_THAT(solver.SetSupply(2 + m, 0), IsOk());
    potentials.push_back(m == 0 ? kSlotValue : 0);
  }
  // Machine 0 (node 2) runs two tasks through their direct arcs; every
  // other machine runs one task placed through the cluster aggregator.
  arc(kCluster, 2, 2, 0, 0);
  arc(2, kSink, 2, 0, 2);
  for (uint32_t m = 1; m < kMachines; ++m) {
    arc(kCluster, 2 + m, 2, 0, 1);
    arc(2 + m, kSink, 2, 0, 1);
  }
  uint32_t task = 2 + kMachines;
  const uint32_t finishing = task;
  uint32_t finishing_first_arc = 0;
  for (int i = 0; i < 2; ++i, ++task) {
    EXPECT_THAT(solver.SetSupply(task, 1), IsOk());
    potentials.push_back(kSlotValue);
    if (i == 0) finishing_first_arc = handle;
    arc(task, 2, 1, 0, 1);
    arc(task, kCluster, 1, kTaskToCluster, 0);
  }
  for (uint32_t m = 1; m < kMachines; ++m, ++task) {
    EXPECT_THAT(solver.SetSupply(task, 1), IsOk());
    potentials.push_back(kTaskToCluster);
    arc(task, kCluster, 1, kTaskToCluster, 1);
  }
  EXPECT_THAT(solver.SetSupply(kSink, -int64_t{kMachines} - 1), IsOk());
  EXPECT_THAT(solver.InstallSolution(flow, potentials), IsOk());

  EXPECT_THAT(solver.RemoveArc(finishing_first_arc), IsOk());
  EXPECT_THAT(solver.RemoveArc(finishing_first_arc + 1), IsOk());
  EXPECT_THAT(solver.RemoveNode(finishing), IsOk());
  if (!arrival) {
    EXPECT_THAT(solver.SetSupply(kSink, -int64_t{kMachines}), IsOk());
    return SolveToCost(solver, int64_t{kMachines - 1} * kTaskToCluster);
  }
  // The finished task's id is reused; the sink's supply stays.
  EXPECT_THAT(solver.SetSupply(finishing, 1), IsOk());
  EXPECT_THAT(solver.SetArc(finishing_first_arc, finishing, 3, 1, 5), IsOk());
  EXPECT_THAT(solver.SetArc(finishing_first_arc + 1, finishing, kCluster, 1,
                            kTaskToCluster),
              IsOk());
  return SolveToCost(solver, int64_t{kMachines - 1} * kTaskToCluster + 5);
}

TEST(IncrementalSolverTest, SlotFreedOnAFullMachineIsPricedFromTheMachine) {
  // Without the drain walks (which find nothing here, but count the nodes
  // they look at), nodes_touched is what the search settled.
  // Without the pairing passes, which would lend the machine its unit
  // from the sink before any global search (below).
  const IncrementalStats with_walks =
      FinishOnFullMachine({.pair_through_sink = false});
  EXPECT_EQ(with_walks.drained_units, 0);
  EXPECT_EQ(with_walks.backward_runs, 1u);
  const IncrementalStats automatic =
      FinishOnFullMachine({.drain_arc_budget = 0, .pair_through_sink = false});
  EXPECT_EQ(automatic.dijkstra_runs, 1u);
  EXPECT_EQ(automatic.backward_runs, 1u);
  // The machine, then the sink and the cluster aggregator at distance 50.
  EXPECT_LE(automatic.nodes_touched, 3u);
  const IncrementalStats forward = FinishOnFullMachine(
      {.drain_arc_budget = 0,
       .search_side = IncrementalOptions::SearchSide::kForward,
       .pair_through_sink = false});
  EXPECT_EQ(forward.dijkstra_runs, 1u);
  EXPECT_EQ(forward.backward_runs, 0u);
  // Every machine and every task before the full machine.
  EXPECT_GE(forward.nodes_touched, 200u);
}

// IncrementalOptions::pair_through_sink. The machine that lost a task is
// priced 50 above the sink, so the new task is 50 away from the machine's
// deficit: a global search from the task settles every node within that
// distance, the whole network. The pairing passes lend the machine its
// unit from the sink (one node settled, the sink met at 50), then pair the
// new task with the sink (the task and its machine settled, the sink met
// at 0).
TEST(IncrementalSolverTest, FreedSlotAndArrivalArePairedThroughTheSink) {
  const IncrementalStats global = FinishOnFullMachine(
      {.drain_arc_budget = 0, .pair_through_sink = false}, /*arrival=*/true);
  EXPECT_EQ(global.dijkstra_runs, 1u);
  EXPECT_GE(global.nodes_touched, 200u);
  const IncrementalStats paired =
      FinishOnFullMachine({.drain_arc_budget = 0}, /*arrival=*/true);
  EXPECT_EQ(paired.dijkstra_runs, 0u);
  EXPECT_EQ(paired.blocking_flows, 0u);
  EXPECT_EQ(paired.pairing_searches, 2u);
  EXPECT_EQ(paired.paired_units, 2);
  EXPECT_EQ(paired.augmentations, 2u);
  EXPECT_EQ(paired.nodes_touched, 3u);
  // One record per pass, in order: the machine borrows from the sink at
  // distance 50, the task repays it at 0.
  ASSERT_EQ(paired.searches.size(), 2u);
  EXPECT_EQ(paired.searches[0].kind, SearchRecord::Kind::kPairBackward);
  EXPECT_EQ(paired.searches[0].roots, 1u);
  EXPECT_EQ(paired.searches[0].units, 1);
  EXPECT_EQ(paired.searches[0].nodes, 1u);
  EXPECT_EQ(paired.searches[0].last_distance, 50);
  EXPECT_EQ(paired.searches[1].kind, SearchRecord::Kind::kPairForward);
  EXPECT_EQ(paired.searches[1].roots, 1u);
  EXPECT_EQ(paired.searches[1].units, 1);
  EXPECT_EQ(paired.searches[1].nodes, 2u);
  EXPECT_EQ(paired.searches[1].last_distance, 0);
}

// The finished task alone: the sink, which has the unit the machine lacks,
// lends it back in one backward pairing search that settles the machine.
TEST(IncrementalSolverTest, SlotFreedOnAFullMachineIsPairedWithTheSink) {
  const IncrementalStats stats = FinishOnFullMachine({.drain_arc_budget = 0});
  EXPECT_EQ(stats.dijkstra_runs, 0u);
  EXPECT_EQ(stats.pairing_searches, 1u);
  EXPECT_EQ(stats.paired_units, 1);
  EXPECT_EQ(stats.nodes_touched, 1u);
}

// The sink is chosen among the nodes of negative supply and chosen again
// when it goes away: a round with no such node (imbalances from a
// negative cycle only, paired among themselves), one where it exists, its
// removal, and its id reused as a source. Every round equals LEMON's.
TEST(IncrementalSolverTest, PairingFollowsTheSinkAsSuppliesChange) {
  IncrementalSolver solver({.drain_arc_budget = 0});
  for (uint32_t v = 0; v < 4; ++v) ASSERT_THAT(solver.SetSupply(v, 0), IsOk());
  // 0 -> 1 -> 2 -> 0, and 2 -> 3 -> 0.
  ASSERT_THAT(solver.SetArc(0, 0, 1, 2, 1), IsOk());
  ASSERT_THAT(solver.SetArc(1, 1, 2, 2, 1), IsOk());
  ASSERT_THAT(solver.SetArc(2, 2, 0, 2, 1), IsOk());
  ASSERT_THAT(solver.SetArc(3, 2, 3, 1, 2), IsOk());
  ASSERT_THAT(solver.SetArc(4, 3, 0, 1, 2), IsOk());
  ASSERT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  // A negative cycle: the repair saturates 0 -> 1, leaving node 1 with two
  // units node 0 lacks, and no node has negative supply.
  ASSERT_THAT(solver.SetArc(0, 0, 1, 2, -5), IsOk());
  IncrementalStats stats;
  ASSERT_EQ(SolveAndCheck(solver, &stats), McmfOutcome::kOptimal);
  EXPECT_EQ(stats.paired_units, 2);
  EXPECT_EQ(stats.dijkstra_runs, 0u);
  // Node 3 becomes the sink.
  ASSERT_THAT(solver.SetSupply(1, 1), IsOk());
  ASSERT_THAT(solver.SetSupply(3, -1), IsOk());
  ASSERT_EQ(SolveAndCheck(solver, &stats), McmfOutcome::kOptimal);
  // The sink goes away, and its id comes back as a source facing node 2.
  ASSERT_THAT(solver.RemoveArc(3), IsOk());
  ASSERT_THAT(solver.RemoveArc(4), IsOk());
  ASSERT_THAT(solver.SetSupply(1, 0), IsOk());
  ASSERT_THAT(solver.RemoveNode(3), IsOk());
  ASSERT_EQ(SolveAndCheck(solver, &stats), McmfOutcome::kOptimal);
  ASSERT_THAT(solver.SetSupply(3, 2), IsOk());
  ASSERT_THAT(solver.SetArc(3, 3, 0, 2, 4), IsOk());
  ASSERT_THAT(solver.SetSupply(2, -2), IsOk());
  ASSERT_EQ(SolveAndCheck(solver, &stats), McmfOutcome::kOptimal);
  EXPECT_EQ(stats.paired_units, 2);
}

// A pairing search gives up before it reads a hub's list (more than 4,096
// open entries: kPairingEntryBudget), and the global phases place the
// unit: load spreading's cluster aggregator, with an arc to every machine.
TEST(IncrementalSolverTest, PairingLeavesAUnitBehindAHubToTheGlobalPhases) {
  constexpr uint32_t kSink = 0;
  constexpr uint32_t kCluster = 1;
  constexpr uint32_t kMachines = 5000;
  IncrementalSolver solver({.drain_arc_budget = 0});
  EXPECT_THAT(solver.SetSupply(kSink, 0), IsOk());
  EXPECT_THAT(solver.SetSupply(kCluster, 0), IsOk());
  uint32_t handle = 0;
  for (uint32_t m = 0; m < kMachines; ++m) {
    EXPECT_THAT(solver.SetSupply(2 + m, 0), IsOk());
    EXPECT_THAT(solver.SetArc(handle++, kCluster, 2 + m, 1, 0), IsOk());
    EXPECT_THAT(solver.SetArc(handle++, 2 + m, kSink, 1, m % 7), IsOk());
  }
  ASSERT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  const uint32_t task = 2 + kMachines;
  EXPECT_THAT(solver.SetSupply(task, 1), IsOk());
  EXPECT_THAT(solver.SetArc(handle++, task, kCluster, 1, 3), IsOk());
  EXPECT_THAT(solver.SetSupply(kSink, -1), IsOk());
  const IncrementalStats stats = SolveToCost(solver, 3);
  EXPECT_EQ(stats.pairing_searches, 1u);
  EXPECT_EQ(stats.paired_units, 0);
  EXPECT_EQ(stats.dijkstra_runs, 1u);
  ASSERT_GE(stats.searches.size(), 2u);
  EXPECT_EQ(stats.searches[0].kind, SearchRecord::Kind::kPairBackward);
  EXPECT_EQ(stats.searches[0].roots, 0u);  // the sink is the only deficit
  EXPECT_EQ(stats.searches[1].kind, SearchRecord::Kind::kPairForward);
  EXPECT_EQ(stats.searches[1].entries, 1u);  // the task's own arc only
}

TEST(IncrementalSolverTest, JobArrivalIsPlacedByTheTasksThemselves) {
  // Default options: each task's changed arcs make it send its unit over
  // its cheapest arc (its own machine) at once, and the drain walks carry
  // the machines' units to the sink. No Dijkstra at all.
  const IncrementalStats stats = PlaceJobWithDistinctCosts({});
  EXPECT_EQ(stats.dijkstra_runs, 0u);
  EXPECT_EQ(stats.drained_units, 40);
}

// (b) General random networks with negative costs, self-loops and parallel
// arcs, through sequences of random changes (many rounds infeasible).
// Scheduling networks are plateaus of zero reduced cost, where a phase's
// maximum flow (BlockingFlow) does most of the routing: relabels, gaps, and
// deficits filled by one excess node while another's path passes through
// them. Random dense networks with costs of 0 and 1 and several units at
// each end put every batch there; each is checked against LEMON.
TEST(IncrementalSolverTest, ZeroCostPlateausAreRoutedCompletely) {
  int optimal = 0;
  uint64_t flow_augmentations = 0;  // by BlockingFlow, not a tree path
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    std::mt19937_64 rng(seed);
    auto rand = [&rng](int64_t lo, int64_t hi) {
      return lo +
             static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
    };
    IncrementalSolver solver(OptionsVariant(static_cast<int>(seed * 11 % 64)));
    const auto nodes = static_cast<uint32_t>(rand(8, 30));
    for (uint32_t v = 0; v < nodes; ++v)
      ASSERT_THAT(solver.SetSupply(v, 0), IsOk());
    uint32_t handle = 0;
    for (uint32_t u = 0; u < nodes; ++u) {
      for (uint32_t w = 0; w < nodes; ++w) {
        if (u == w || rand(0, 3) != 0) continue;
        ASSERT_THAT(solver.SetArc(handle++, u, w, rand(1, 3), rand(0, 5) == 0),
                    IsOk());
      }
    }
    for (int batch = 0; batch < 6; ++batch) {
      // Balanced supplies: a few excess nodes, a few deficits.
      std::vector<int64_t> supply(nodes, 0);
      for (int k = rand(1, 4); k > 0; --k) {
        const int64_t units = rand(1, 4);
        supply[static_cast<size_t>(rand(0, nodes - 1))] += units;
        supply[static_cast<size_t>(rand(0, nodes - 1))] -= units;
      }
      for (uint32_t v = 0; v < nodes; ++v) {
        ASSERT_THAT(solver.SetSupply(v, supply[v]), IsOk());
      }
      IncrementalStats stats;
      if (SolveAndCheck(solver, &stats) == McmfOutcome::kOptimal) ++optimal;
      flow_augmentations += stats.augmentations - stats.tree_augmentations;
      if (::testing::Test::HasFailure()) {
        FAIL() << "seed " << seed << " batch " << batch;
      }
    }
  }
  // The networks are there for the blocking flow: most batches feasible,
  // and thousands of paths routed by it rather than along search trees.
  EXPECT_GT(optimal, 600);               // 698 of 900 batches
  EXPECT_GT(flow_augmentations, 2000u);  // 5,025
}

}  // namespace
}  // namespace flowsched::solver
