// Gangs through the whole core loop (sync, mirror, solve with gangs, check
// against LEMON, apply), for each way RoundSolver solves.

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/core/gang_requirements.h"
#include "services/core/gang_rule.h"
#include "services/core/policy_network.h"
#include "services/core/round_apply.h"
#include "services/core/round_solver.h"
#include "services/solver/lemon_reference.h"

namespace flowsched::core {
namespace {

using ::flowsched::testing::IsOk;

constexpr int64_t kHoldAfterUs = 1'000'000;

// A network's content whatever the order its arcs were added in.
std::vector<flow::GraphChange> Sorted(std::vector<flow::GraphChange> changes) {
  std::sort(changes.begin(), changes.end(), [](const auto& a, const auto& b) {
    return std::tie(a.type, a.node, a.src, a.dst) <
           std::tie(b.type, b.node, b.src, b.dst);
  });
  return changes;
}

class GangRoundTest
    : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
 protected:
  void SetUp() override {
    auto created = RoundSolver::Create(std::get<0>(GetParam()));
    ASSERT_THAT(created.status(), IsOk());
    round_solver_ = std::move(*created);
    round_solver_->set_keep_problems(true);
  }

  void Event(cluster::EventBody body, int64_t now_us) {
    ASSERT_THAT(state_.Apply(
                    cluster::ClusterEvent{"e", now_us, "test", std::move(body)},
                    now_us, changes_),
                IsOk());
  }
  void Machines(uint64_t count, uint32_t slots) {
    for (uint64_t m = 1; m <= count; ++m) {
      cluster::MachineAdded added;
      added.machine = MachineId(m);
      added.rack = "r";
      added.task_slots = slots;
      Event(added, 0);
    }
  }
  // Job `job` of `tasks` tasks (ids job*100+1...), a gang of `min_members`.
  void Job(uint64_t job, uint64_t tasks, uint32_t min_members,
           int64_t now_us = 0) {
    cluster::JobSubmitted submitted;
    submitted.job = JobId(job);
    submitted.name = "j";
    submitted.min_members = min_members;
    for (uint64_t t = 1; t <= tasks; ++t) {
      cluster::TaskSpec spec;
      spec.id = TaskId(job * 100 + t);
      submitted.tasks.push_back(spec);
    }
    Event(submitted, now_us);
  }

  // One round at `now_us`: sync, mirror, solve with the state's gangs; the
  // checked cost is LEMON's optimum of the last pass's problem, and the
  // replica equals the policy's network afterwards. Applies the decisions.
  SolvedRound Round(int64_t now_us) {
    if (!adopted_) {
      EXPECT_THAT(policy_.Adopt(policy_name_), IsOk());
      policy_.network().set_record_changes(true);
      adopted_ = true;
    }
    EXPECT_THAT(policy_.Sync(changes_, state_, now_us), IsOk());
    EXPECT_THAT(policy_.Refresh(state_, now_us), IsOk());
    changes_.Clear();
    for (const flow::GraphChange& change : policy_.network().TakeChanges()) {
      EXPECT_THAT(round_solver_->Apply(change), IsOk());
    }
    std::vector<GangRequirement> gangs =
        GangRequirementsOf(state_, now_us, kHoldAfterUs);
    for (GangRequirement& gang : gangs) gang.hold |= force_hold_;
    SolvedRound solved = round_solver_->Solve(std::get<1>(GetParam()), gangs);
    EXPECT_THAT(solved.verdict, IsOk());
    const solver::testgen::LemonResult reference =
        solver::testgen::SolveWithLemon(*round_solver_->problem());
    EXPECT_EQ(reference.outcome, solver::McmfOutcome::kOptimal);
    EXPECT_EQ(solved.total_cost, reference.total_cost);
    EXPECT_EQ(Sorted(round_solver_->network().SnapshotChanges()),
              Sorted(policy_.network().SnapshotChanges()));
    const AppliedRound applied =
        ApplyRound(solved.decisions, state_, now_us, changes_);
    EXPECT_EQ(applied.applied, solved.decisions.size());
    return solved;
  }

  // `count` machines of 8 slots and 8 a100 GPUs.
  void GpuMachines(uint64_t count) {
    for (uint64_t m = 1; m <= count; ++m) {
      cluster::MachineAdded added{
          MachineId(m), "r", {64'000, 1LL << 40, 0}, 8, {}};
      added.accelerators = {{.count = 8, .model = "a100"}};
      Event(added, 0);
    }
  }
  // Job `job` of `tasks` tasks of `gpus` whole GPUs each.
  void GpuJob(uint64_t job, uint64_t tasks, uint32_t gpus, uint32_t min_members,
              int64_t now_us = 0) {
    cluster::JobSubmitted submitted;
    submitted.job = JobId(job);
    submitted.min_members = min_members;
    for (uint64_t t = 1; t <= tasks; ++t) {
      cluster::TaskSpec& spec = submitted.tasks.emplace_back();
      spec.id = TaskId(job * 100 + t);
      spec.request.cpu_millis = 1000;
      spec.accelerator.whole = gpus;
    }
    Event(submitted, now_us);
  }

  // Tasks of `job` on machines.
  uint32_t Running(uint64_t job) const {
    return state_.FindJob(JobId(job))->running;
  }
  void Finish(uint64_t job, int64_t now_us) {
    const std::set<TaskId> tasks = state_.FindJob(JobId(job))->tasks;
    for (TaskId task : tasks) {
      Event(cluster::TaskFinished{JobId(job), task}, now_us);
    }
  }

  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
  PolicyNetwork policy_;
  std::unique_ptr<RoundSolver> round_solver_;
  bool force_hold_ = false;  // every gang marked hold, whatever its age
  std::string policy_name_ = "load-spreading";  // adopted at the first Round
  bool adopted_ = false;
};

TEST_P(GangRoundTest, AGangThatFitsIsPlacedWholeAndMarked) {
  Machines(2, 2);
  Job(1, 4, 4);
  const SolvedRound round = Round(1);
  EXPECT_EQ(Running(1), 4u);
  EXPECT_TRUE(round.gangs_withdrawn.empty());
  ASSERT_EQ(round.decisions.size(), 4u);
  for (const Decision& d : round.decisions) {
    EXPECT_EQ(d.job, JobId(1));
    EXPECT_EQ(d.gang_min_members, 4u);
  }
}

TEST_P(GangRoundTest, AGangTooLargeWaitsAndSmallerWorkTakesTheRoom) {
  Machines(2, 2);  // 4 slots
  Job(1, 6, 6);
  Job(2, 3, 0);
  const SolvedRound round = Round(1);
  EXPECT_EQ(Running(1), 0u);
  EXPECT_EQ(Running(2), 3u);
  EXPECT_EQ(round.gangs_withdrawn, std::vector<JobId>{JobId(1)});
  EXPECT_GE(round.passes, 2u);
  for (const Decision& d : round.decisions) {
    EXPECT_EQ(d.gang_min_members, 0u);
  }
  // The next round offers the gang again: still no room, still none.
  Job(3, 1, 0, 2);
  Round(2);
  EXPECT_EQ(Running(1), 0u);
  EXPECT_EQ(Running(3), 1u);
}

TEST_P(GangRoundTest, TwoGangsCompetingForRoomOfOnePlaceExactlyOneWhole) {
  Machines(3, 2);  // 6 slots
  Job(1, 4, 4);
  Job(2, 4, 4);
  Round(1);
  const uint32_t one = Running(1), two = Running(2);
  EXPECT_TRUE((one == 4 && two == 0) || (one == 0 && two == 4))
      << one << " and " << two;
  // When the placed gang finishes, the other one gets the room.
  Finish(one == 4 ? 1 : 2, 2);
  Round(2);
  EXPECT_EQ(Running(one == 4 ? 2 : 1), 4u);
}

TEST_P(GangRoundTest, AGangOfMinMembersBelowItsSizePlacesAtLeastThatMany) {
  Machines(1, 3);
  Job(1, 5, 3);
  Round(1);
  EXPECT_EQ(Running(1), 3u);
  // Formed: further members are placed one by one as room frees.
  Event(cluster::MachineAdded{MachineId(9), "r", {}, 1, {}}, 2);
  Round(2);
  EXPECT_EQ(Running(1), 4u);
}

TEST_P(GangRoundTest, AStarvedGangHoldsTheRoomUntilItFits) {
  Machines(2, 2);  // 4 slots
  Job(3, 3, 0);
  Round(1);
  ASSERT_EQ(Running(3), 3u);
  Job(1, 4, 4, 2);  // the gang: 1 slot free
  Round(2);
  EXPECT_EQ(Running(1), 0u);
  // Past the hold age, smaller work no longer takes what frees up.
  Job(2, 1, 0, 2 + kHoldAfterUs);
  const SolvedRound held = Round(2 + kHoldAfterUs);
  EXPECT_TRUE(held.held);
  EXPECT_EQ(Running(2), 0u);
  EXPECT_EQ(Running(1), 0u);
  Finish(3, 3 + kHoldAfterUs);
  Round(3 + kHoldAfterUs);
  EXPECT_EQ(Running(1), 4u);
  EXPECT_EQ(Running(2), 0u);
}

TEST_P(GangRoundTest, AStarvedGangThatCannotFitAtAllDoesNotHoldTheCluster) {
  Machines(1, 2);
  Job(1, 3, 3);
  Job(2, 1, 0, kHoldAfterUs);
  // The graph manager's side: it could not fit even on empty machines.
  const std::vector<GangRequirement> gangs =
      GangRequirementsOf(state_, 2 * kHoldAfterUs, kHoldAfterUs);
  ASSERT_EQ(gangs.size(), 1u);
  EXPECT_FALSE(gangs[0].hold);
  // The solver's side, told to hold anyway: with nothing else on the
  // machines the gang still does not fit, so the hold is released.
  force_hold_ = true;
  const SolvedRound round = Round(2 * kHoldAfterUs);
  EXPECT_FALSE(round.held);
  EXPECT_EQ(Running(1), 0u);
  EXPECT_EQ(Running(2), 1u);
  EXPECT_EQ(round.gangs_withdrawn, std::vector<JobId>{JobId(1)});
}

// cpu-memory reserves each machine's devices among the request shapes: a
// held gang cannot take room reserved for another shape, so holding that
// room would idle it for nothing.
TEST_P(GangRoundTest, AHoldNeverIdlesRoomTheGangCannotUse) {
  policy_name_ = "cpu-memory";
  GpuMachines(2);
  GpuJob(1, 2, 8, 2);  // the gang needs both machines whole
  GpuJob(2, 1, 1, 0);
  force_hold_ = true;
  const SolvedRound round = Round(1);
  // The reservation gives one machine to each shape, so the gang cannot
  // have both: first pass, the hold's pass, then the hold released and the
  // gang withdrawn, and the small task keeps its machine.
  EXPECT_EQ(Running(1), 0u);
  EXPECT_EQ(Running(2), 1u);
  EXPECT_FALSE(round.held);
  EXPECT_EQ(round.passes, 3u);
  EXPECT_EQ(round.gangs_withdrawn, std::vector<JobId>{JobId(1)});
}

// The same cluster under cpu-memory's starvation rule (a shape waiting
// past the hold age is offered every machine's room first): small GPU
// tasks that keep arriving take one machine's devices from the gang until
// it has waited that long; then its shape has both machines reserved and
// the gang is placed whole while the newest small task waits.
TEST_P(GangRoundTest, UnderCpuMemoryAStarvingGangHasItsRoomReserved) {
  policy_name_ = "cpu-memory:gang_first_after_s=1";  // kHoldAfterUs
  GpuMachines(2);
  GpuJob(1, 2, 8, 2);
  GpuJob(2, 1, 1, 0);
  Round(1);
  EXPECT_EQ(Running(1), 0u);
  EXPECT_EQ(Running(2), 1u);
  // Before the age, the small work that replaces job 2 wins again.
  Finish(2, 500'000);
  GpuJob(3, 1, 1, 0, 500'000);
  Round(500'000);
  EXPECT_EQ(Running(1), 0u);
  EXPECT_EQ(Running(3), 1u);
  Finish(3, kHoldAfterUs + 1);
  GpuJob(4, 1, 1, 0, kHoldAfterUs + 1);
  const SolvedRound round = Round(kHoldAfterUs + 1);
  // Whole in the first pass: the room was reserved for it, so the hold
  // had nothing to take back.
  EXPECT_EQ(round.passes, 1u);
  EXPECT_EQ(Running(1), 2u);
  EXPECT_EQ(Running(4), 0u);
}

TEST_P(GangRoundTest, OnlyTheLongestWaitingGangThatCouldFitHolds) {
  Machines(2, 2);
  Job(1, 4, 4, 0);
  Job(2, 4, 4, 0);  // the same age: the lower job id first
  Job(3, 5, 5, 0);  // older than nothing, and could never fit 4 slots
  std::vector<GangRequirement> gangs =
      GangRequirementsOf(state_, kHoldAfterUs, kHoldAfterUs);
  ASSERT_EQ(gangs.size(), 3u);
  EXPECT_TRUE(gangs[0].hold);
  EXPECT_FALSE(gangs[1].hold);
  EXPECT_FALSE(gangs[2].hold);
  EXPECT_EQ(gangs[2].need, 5u);
  gangs = GangRequirementsOf(state_, kHoldAfterUs - 1, kHoldAfterUs);
  EXPECT_FALSE(gangs[0].hold);  // not old enough yet
  EXPECT_FALSE(GangRequirementsOf(state_, kHoldAfterUs, 0)[0].hold);
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, GangRoundTest,
    ::testing::Values(std::tuple{std::string(kIncrementalRounds), false},
                      std::tuple{std::string(kIncrementalRounds), true},
                      std::tuple{std::string("cost_scaling"), false}));

TEST(GangRuleTest, WithdrawsTheGangWithFewestPlacedThenTheYoungest) {
  const std::vector<GangRequirement> gangs = {
      {JobId(1), 4, 4, false}, {JobId(2), 4, 4, true}, {JobId(3), 4, 4, false}};
  std::map<JobId, GangTally> tally = {
      {JobId(1), {2, 2}}, {JobId(2), {1, 1}}, {JobId(3), {1, 1}}};
  const std::vector<JobId> partial = PartialGangs(gangs, tally);
  ASSERT_EQ(partial.size(), 3u);
  EXPECT_EQ(GangToWithdraw(partial, gangs, tally), JobId(3));
  tally[JobId(3)] = {4, 4};
  EXPECT_EQ(PartialGangs(gangs, tally).size(), 2u);
}

}  // namespace
}  // namespace flowsched::core
