#include "services/core/round_solver.h"

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/core/core_test_util.h"
#include "services/core/gang_requirements.h"
#include "services/core/policy_network.h"
#include "services/core/round_apply.h"
#include "services/flow/scheduling_policy.h"
#include "services/solver/lemon_reference.h"

namespace flowsched::core {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

TEST(RoundSolverTest, UnknownAlgorithmIsRefused) {
  EXPECT_THAT(RoundSolver::Create("no-such-solver").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
}

// The whole core loop, as the simulator runs it: sync, mirror, solve,
// apply, round after round, for each algorithm and in both modes.
class RoundSolverLoopTest
    : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(RoundSolverLoopTest, PlacesWhatFitsAndThenStaysPut) {
  const std::string& algorithm = std::get<0>(GetParam());
  const bool deterministic = std::get<1>(GetParam());  // captured below
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  BuildSmallCluster(3, 2, 8, state, changes);  // 6 slots, 8 tasks
  PolicyNetwork policy;
  ASSERT_THAT(policy.Adopt("load-spreading"), IsOk());
  policy.network().set_record_changes(true);
  auto round_solver = RoundSolver::Create(algorithm);
  ASSERT_THAT(round_solver.status(), IsOk());

  const auto round = [&](int64_t now_us) {
    EXPECT_THAT(policy.Sync(changes, state, now_us), IsOk());
    changes.Clear();
    for (const flow::GraphChange& change : policy.network().TakeChanges()) {
      EXPECT_THAT((*round_solver)->Apply(change), IsOk());
    }
    SolvedRound solved = (*round_solver)->Solve(deterministic);
    EXPECT_THAT(solved.verdict, IsOk());
    // The checked cost is LEMON's optimum on the same problem.
    solver::McmfProblem problem;
    std::vector<flow::ArcSlot> slots;
    (*round_solver)->network().ExportProblem(problem, slots);
    const solver::testgen::LemonResult reference =
        solver::testgen::SolveWithLemon(problem);
    EXPECT_EQ(reference.outcome, solver::McmfOutcome::kOptimal);
    EXPECT_EQ(solved.total_cost, reference.total_cost);
    return solved;
  };

  const SolvedRound first = round(1);
  EXPECT_EQ(first.decisions.size(), 6u);
  for (const Decision& d : first.decisions) {
    EXPECT_EQ(d.action, Action::kPlace);
    EXPECT_EQ(d.job, JobId(1));
  }
  const AppliedRound applied = ApplyRound(first.decisions, state, 1, changes);
  EXPECT_EQ(applied.applied, 6u);
  EXPECT_EQ(state.running_task_count(), 6u);
  for (const auto& [id, machine] : state.machines()) {
    EXPECT_EQ(machine.running.size(), 2u);  // spread evenly
  }
  // Nothing changed but the placements: the next round keeps them.
  const SolvedRound second = round(2);
  EXPECT_TRUE(second.decisions.empty());
  EXPECT_EQ(second.tasks, 8u);
  EXPECT_EQ(second.tasks_placed, 6u);

  // A task finishes: one waiting task takes its slot.
  cluster::ChangeSet finished;
  const TaskId done = *state.machines().at(MachineId(1)).running.begin();
  ASSERT_THAT(
      state.Apply(cluster::ClusterEvent{"e", 3, "test",
                                        cluster::TaskFinished{JobId(1), done}},
                  3, finished),
      IsOk());
  changes.Merge(finished);
  const SolvedRound third = round(3);
  ASSERT_EQ(third.decisions.size(), 1u);
  EXPECT_EQ(third.decisions[0].action, Action::kPlace);
  EXPECT_EQ(third.decisions[0].machine, MachineId(1));
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, RoundSolverLoopTest,
    ::testing::Values(std::tuple{std::string(kIncrementalRounds), false},
                      std::tuple{std::string(kIncrementalRounds), true},
                      std::tuple{std::string("cost_scaling"), false},
                      std::tuple{std::string("ssp"), false}));

// Churn under every policy: each repaired round's kept placements are
// compared with a full extraction (set_verify_extraction), and most rounds
// read only what changed. Every fourth round is deterministic (solved from
// scratch, the mirror's log kept growing), every fourth job a gang (its
// passes block and restore arcs through the mirror), and halfway the
// replica is reset and rebuilt from a snapshot.
class KeptPlacementsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(KeptPlacementsTest, MatchAFullExtractionUnderChurn) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  BuildSmallCluster(8, 3, 30, state, changes);  // 24 slots, 30 tasks
  PolicyNetwork policy;
  ASSERT_THAT(policy.Adopt(GetParam()), IsOk());
  policy.network().set_record_changes(true);
  auto round_solver = RoundSolver::Create(kIncrementalRounds);
  ASSERT_THAT(round_solver.status(), IsOk());
  (*round_solver)->set_verify_extraction(true);
  std::mt19937_64 rng(7);
  uint64_t next_task = 1000;
  int incremental = 0;
  size_t decisions = 0;
  int gang_rounds = 0;  // rounds with a gang still to place
  constexpr int kRounds = 40;
  for (int r = 1; r <= kRounds; ++r) {
    const int64_t now_us = int64_t{r} * 100'000;
    ASSERT_THAT(policy.Sync(changes, state, now_us), IsOk());
    ASSERT_THAT(policy.Refresh(state, now_us), IsOk());
    changes.Clear();
    std::vector<flow::GraphChange> delta = policy.network().TakeChanges();
    if (r == kRounds / 2) {
      (*round_solver)->Reset();
      delta = policy.network().SnapshotChanges();
    }
    for (const flow::GraphChange& change : delta) {
      ASSERT_THAT((*round_solver)->Apply(change), IsOk());
    }
    const std::vector<GangRequirement> gangs =
        GangRequirementsOf(state, now_us, kDefaultGangHoldAfterUs);
    const SolvedRound solved = (*round_solver)->Solve(r % 4 == 3, gangs);
    ASSERT_THAT(solved.verdict, IsOk()) << "round " << r;
    incremental += solved.extracted_in_full ? 0 : 1;
    decisions += solved.decisions.size();
    gang_rounds += std::any_of(gangs.begin(), gangs.end(),
                               [](const auto& g) { return g.need > 0; });
    ApplyRound(solved.decisions, state, now_us, changes);
    // Two running tasks finish and, every other round, two arrive.
    std::vector<std::pair<JobId, TaskId>> running;
    for (const auto& [id, task] : state.tasks()) {
      if (task.running()) running.emplace_back(task.job, id);
    }
    for (int k = 0; k < 2 && !running.empty(); ++k) {
      const size_t pick = rng() % running.size();
      ASSERT_THAT(state.Apply(cluster::ClusterEvent{"e", now_us, "test",
                                                    cluster::TaskFinished{
                                                        running[pick].first,
                                                        running[pick].second}},
                              now_us, changes),
                  IsOk());
      running.erase(running.begin() + static_cast<int64_t>(pick));
    }
    if (r % 2 == 0) {
      cluster::JobSubmitted job;
      job.job = JobId(next_task);
      job.name = "j";
      // A gang of five: with two slots freed a round it waits, and under
      // most policies is left partial, withdrawn and solved again.
      const int size = r % 8 == 0 ? 5 : 2;
      if (size == 5) job.min_members = 5;
      for (int k = 0; k < size; ++k) {
        cluster::TaskSpec spec;
        spec.id = TaskId(++next_task);
        job.tasks.push_back(spec);
      }
      ++next_task;
      ASSERT_THAT(state.Apply(cluster::ClusterEvent{"e", now_us, "test", job},
                              now_us, changes),
                  IsOk());
    }
  }
  // The first round, the one after the reset and the deterministic rounds
  // extract in full.
  EXPECT_GE(incremental, kRounds / 2);
  // The first round's 24 placements, then the churn's.
  EXPECT_GE(decisions, 24u + kRounds);
  EXPECT_GT(gang_rounds, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Policies, KeptPlacementsTest, ::testing::ValuesIn(flow::PolicyNames()),
    [](const ::testing::TestParamInfo<std::string>& param) {
      std::string name = param.param;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

using RoundSolverFixtureTest = SmallClusterTest;

TEST_F(RoundSolverFixtureTest, ResetEmptiesTheReplica) {
  Build(1, 1, 1);
  auto round_solver = RoundSolver::Create(kIncrementalRounds);
  ASSERT_THAT(round_solver.status(), IsOk());
  for (const auto& change : network_.network().SnapshotChanges()) {
    ASSERT_THAT((*round_solver)->Apply(change), IsOk());
  }
  EXPECT_GT((*round_solver)->network().node_count(), 0u);
  (*round_solver)->Reset();
  EXPECT_EQ((*round_solver)->network().node_count(), 0u);
  // A snapshot rebuilds it.
  for (const auto& change : network_.network().SnapshotChanges()) {
    ASSERT_THAT((*round_solver)->Apply(change), IsOk());
  }
  EXPECT_THAT((*round_solver)->Solve(false).verdict, IsOk());
}

}  // namespace
}  // namespace flowsched::core
