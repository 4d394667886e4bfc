// IncrementalSolver's contract on general networks: random change
// sequences (nodes, arcs, supplies, reuse of ids) checked against LEMON
// after every Solve, recentering, infeasible rounds, and the error codes.

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/solver/incremental_check_testutil.h"
#include "services/solver/incremental_sim_testutil.h"
#include "services/solver/incremental_solver.h"

namespace flowsched::solver {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;
using testgen::OptionsVariant;
using testgen::SolveAndCheck;

TEST(IncrementalSolverTest, RandomGeneralSequences) {
  int optimal = 0;
  int infeasible = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed);
    auto rand = [&rng](int64_t lo, int64_t hi) {
      return lo +
             static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
    };
    IncrementalSolver solver(OptionsVariant(static_cast<int>(seed * 11 % 64)));
    const uint32_t nodes = 25;
    const uint32_t handles = 90;
    std::vector<int64_t> supply(nodes, 0);
    std::vector<bool> node_live(nodes, true);
    std::vector<bool> live(handles, false);
    std::vector<std::pair<uint32_t, uint32_t>> ends(handles);
    for (uint32_t v = 0; v < nodes; ++v)
      ASSERT_THAT(solver.SetSupply(v, 0), IsOk());
    auto live_node = [&]() {
      while (true) {
        const auto v = static_cast<uint32_t>(rand(0, nodes - 1));
        if (node_live[v]) return v;
      }
    };
    for (int batch = 0; batch < 120; ++batch) {
      const int64_t events = rand(1, 15);
      for (int64_t e = 0; e < events; ++e) {
        const int64_t kind = rand(0, 99);
        const auto h = static_cast<uint32_t>(rand(0, handles - 1));
        if (kind < 35) {
          // Add or change an arc (occasionally to new endpoints).
          uint32_t src = live[h] ? ends[h].first : live_node();
          uint32_t dst = live[h] ? ends[h].second : live_node();
          if (rand(0, 9) == 0) {
            src = live_node();
            dst = rand(0, 9) == 0 ? src : live_node();
          }
          ASSERT_THAT(solver.SetArc(h, src, dst, rand(0, 20), rand(-30, 50)),
                      IsOk());
          live[h] = true;
          ends[h] = {src, dst};
        } else if (kind < 50) {
          if (!live[h]) continue;
          ASSERT_THAT(solver.RemoveArc(h), IsOk());
          live[h] = false;
        } else if (kind < 65) {
          if (!live[h]) continue;
          ASSERT_THAT(solver.SetArc(h, ends[h].first, ends[h].second,
                                    rand(0, 20), rand(-30, 50)),
                      IsOk());
        } else if (kind < 92 && kind >= 88) {
          // Occasionally clear all supplies so sequences leave infeasible
          // stretches (imbalances accumulate otherwise).
          for (uint32_t v = 0; v < nodes; ++v) {
            supply[v] = 0;
            if (node_live[v]) {
              ASSERT_THAT(solver.SetSupply(v, 0), IsOk());
            }
          }
        } else if (kind < 90) {
          // Move supply between two live nodes; the sum stays zero.
          const uint32_t a = live_node();
          const uint32_t b = live_node();
          const int64_t amount = rand(1, 8);
          supply[a] += amount;
          supply[b] -= amount;
          ASSERT_THAT(solver.SetSupply(a, supply[a]), IsOk());
          ASSERT_THAT(solver.SetSupply(b, supply[b]), IsOk());
        } else {
          // Remove a node with all its arcs (supply moved elsewhere first),
          // or bring a removed node back.
          const auto v = static_cast<uint32_t>(rand(0, nodes - 1));
          if (node_live[v]) {
            uint32_t other = v;
            for (uint32_t u = 0; u < nodes; ++u) {
              if (u != v && node_live[u]) other = u;
            }
            if (other == v) continue;
            for (uint32_t a = 0; a < handles; ++a) {
              if (live[a] && (ends[a].first == v || ends[a].second == v)) {
                ASSERT_THAT(solver.RemoveArc(a), IsOk());
                live[a] = false;
              }
            }
            supply[other] += supply[v];
            supply[v] = 0;
            ASSERT_THAT(solver.SetSupply(other, supply[other]), IsOk());
            ASSERT_THAT(solver.RemoveNode(v), IsOk());
            node_live[v] = false;
          } else {
            ASSERT_THAT(solver.SetSupply(v, 0), IsOk());
            node_live[v] = true;
          }
        }
      }
      if (SolveAndCheck(solver) == McmfOutcome::kOptimal) {
        ++optimal;
      } else {
        ++infeasible;
      }
      if (HasFailure()) FAIL() << "seed " << seed << " batch " << batch;
    }
  }
  EXPECT_GT(optimal, 100);
  EXPECT_GT(infeasible, 100);
}

// (c) Handles and node ids are reused after removal, possibly with other
// endpoints, and a live handle may move to new endpoints.
TEST(IncrementalSolverTest, HandleAndNodeReuse) {
  IncrementalSolver solver;
  ASSERT_THAT(solver.SetSupply(0, 3), IsOk());
  ASSERT_THAT(solver.SetSupply(1, 0), IsOk());
  ASSERT_THAT(solver.SetSupply(2, -3), IsOk());
  ASSERT_THAT(solver.SetArc(0, 0, 1, 5, 1), IsOk());
  ASSERT_THAT(solver.SetArc(1, 1, 2, 5, 1), IsOk());
  ASSERT_THAT(solver.SetArc(2, 0, 2, 2, 3), IsOk());
  ASSERT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  EXPECT_EQ(solver.flow(0), 3);
  EXPECT_EQ(solver.flow(2), 0);

  // Node 1 goes away with its arcs; handle 0 comes back as 0 -> 2 and the
  // network must now use both direct arcs.
  ASSERT_THAT(solver.RemoveArc(0), IsOk());
  ASSERT_THAT(solver.RemoveArc(1), IsOk());
  ASSERT_THAT(solver.RemoveNode(1), IsOk());
  ASSERT_THAT(solver.SetArc(0, 0, 2, 1, 7), IsOk());
  ASSERT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  EXPECT_EQ(solver.flow(0), 1);
  EXPECT_EQ(solver.flow(2), 2);
  EXPECT_EQ(solver.flow(1), 0);  // free handle

  // Node 1 returns as a source with a cheap path; handle 1 is reused.
  ASSERT_THAT(solver.SetSupply(1, 2), IsOk());
  ASSERT_THAT(solver.SetSupply(2, -5), IsOk());
  ASSERT_THAT(solver.SetArc(1, 1, 2, 10, -4), IsOk());
  ASSERT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  EXPECT_EQ(solver.flow(1), 2);

  // A live handle moved to new endpoints carries its flow no further.
  ASSERT_THAT(solver.SetArc(2, 1, 0, 4, 0), IsOk());  // was 0 -> 2
  ASSERT_THAT(solver.SetArc(3, 0, 2, 10, 2), IsOk());
  ASSERT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  EXPECT_EQ(solver.flow(3), 3);
  EXPECT_EQ(solver.flow(2), 0);

  // Ids far beyond the current range grow the arrays.
  ASSERT_THAT(solver.SetSupply(5000, 0), IsOk());
  ASSERT_THAT(solver.SetArc(100000, 5000, 2, 1, 0), IsOk());
  ASSERT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  EXPECT_EQ(solver.node_limit(), 5001u);
}

TEST(IncrementalSolverTest, RecenterKeepsOptimality) {
  IncrementalSolver solver;
  testgen::SimOptions options{.machine_count = 10, .initial_tasks = 30};
  testgen::SchedulingSim sim(3, options, solver);
  ASSERT_THAT(sim.Build(), IsOk());
  ASSERT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  for (int i = 0; i < 20; ++i) {
    for (int e = 0; e < 5; ++e) sim.RandomEvent();
    solver.RecenterPotentials();  // between changes and Solve on purpose
    SolveAndCheck(solver);
    solver.RecenterPotentials();
    McmfProblem problem;
    McmfSolution solution;
    std::vector<uint32_t> handles;
    solver.Export(problem, solution, handles);
    if (solution.outcome == McmfOutcome::kOptimal) {
      EXPECT_THAT(CheckOptimalFlow(problem, solution), IsOk());
    }
  }
}

TEST(IncrementalSolverTest, InfeasibleThenRecovers) {
  IncrementalSolver solver;
  ASSERT_THAT(solver.SetSupply(0, 4), IsOk());
  ASSERT_THAT(solver.SetSupply(1, -4), IsOk());
  ASSERT_THAT(solver.SetArc(0, 0, 1, 3, 2), IsOk());
  EXPECT_EQ(SolveAndCheck(solver), McmfOutcome::kInfeasible);
  // Still infeasible with no changes; then a second arc fixes it.
  EXPECT_EQ(SolveAndCheck(solver), McmfOutcome::kInfeasible);
  ASSERT_THAT(solver.SetArc(1, 0, 1, 1, 5), IsOk());
  EXPECT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  EXPECT_EQ(solver.flow(0), 3);
  EXPECT_EQ(solver.flow(1), 1);
}

TEST(IncrementalSolverTest, EmptyAndNoChangeSolves) {
  IncrementalSolver solver;
  EXPECT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  ASSERT_THAT(solver.SetSupply(0, 1), IsOk());
  ASSERT_THAT(solver.SetSupply(1, -1), IsOk());
  ASSERT_THAT(solver.SetArc(0, 0, 1, 1, -5), IsOk());
  EXPECT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
  absl::StatusOr<IncrementalResult> again = solver.Solve();
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->total_cost, -5);
  EXPECT_EQ(again->stats.dijkstra_runs, 0u);
  EXPECT_EQ(again->stats.augmentations, 0u);
}

// (d) Error cases.
TEST(IncrementalSolverTest, Errors) {
  IncrementalSolver solver;
  ASSERT_THAT(solver.SetSupply(0, 1), IsOk());
  ASSERT_THAT(solver.SetSupply(1, -1), IsOk());
  EXPECT_THAT(solver.RemoveArc(0), StatusIs(absl::StatusCode::kNotFound,
                                            "arc handle 0 is not live"));
  EXPECT_THAT(solver.RemoveArc(1u << 30),
              StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_THAT(solver.RemoveNode(7),
              StatusIs(absl::StatusCode::kNotFound, "node 7"));
  EXPECT_THAT(solver.SetArc(0, 0, 7, 1, 1),
              StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_THAT(solver.SetArc(0, 7, 0, 1, 1),
              StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_THAT(solver.SetArc(0, 0, 1, -1, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(solver.SetArc(0, 0, 1, kMaxArcCapacity + 1, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(solver.SetArc(0, 0, 1, 1, kMaxArcCost + 1),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(solver.SetArc(0, 0, 1, 1, -kMaxArcCost - 1),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(solver.SetArc(kMaxIncrementalArcHandle + 1, 0, 1, 1, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(solver.SetSupply(kMaxIncrementalNodeId + 1, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(solver.SetSupply(2, kMaxNodeSupply + 1),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(solver.SetSupply(2, -kMaxNodeSupply - 1),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));

  ASSERT_THAT(solver.SetArc(0, 0, 1, 1, kMaxArcCost), IsOk());
  EXPECT_THAT(
      solver.RemoveNode(0),
      StatusIs(absl::StatusCode::kFailedPrecondition, "remove its arcs first"));
  EXPECT_THAT(solver.RemoveNode(1),
              StatusIs(absl::StatusCode::kFailedPrecondition, ""));

  // Supplies not summing to zero: rejected without touching the state.
  ASSERT_THAT(solver.SetSupply(1, -2), IsOk());
  EXPECT_THAT(solver.Solve(), StatusIs(absl::StatusCode::kInvalidArgument,
                                       "supplies sum to -1"));
  ASSERT_THAT(solver.SetSupply(1, -1), IsOk());
  EXPECT_EQ(SolveAndCheck(solver), McmfOutcome::kOptimal);
}

}  // namespace
}  // namespace flowsched::solver
