#include "services/core/round_apply.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/core/core_test_util.h"

namespace flowsched::core {
namespace {

using ::flowsched::testing::IsOk;

class RoundApplyTest : public ::testing::Test {
 protected:
  // Machines 1..machines of one slot; job 1 of tasks 1..tasks.
  void Build(uint64_t machines, uint64_t tasks) {
    BuildSmallCluster(machines, 1, tasks, state_, changes_);
    ASSERT_EQ(state_.tasks().size(), tasks);
  }
  static cluster::ClusterEvent Event(cluster::EventBody body) {
    return cluster::ClusterEvent{"e", 0, "test", std::move(body)};
  }
  void Run(uint64_t task, uint64_t machine) {
    ASSERT_THAT(state_.Place(TaskId(task), MachineId(machine), 0, changes_),
                IsOk());
  }
  [[nodiscard]] uint64_t Where(uint64_t task) const {
    return state_.FindTask(TaskId(task))->machine.value();
  }
  static Decision Place(uint64_t task, uint64_t machine) {
    return {TaskId(task), JobId(1), MachineId(machine), MachineId(0),
            Action::kPlace};
  }
  static Decision Preempt(uint64_t task, uint64_t from) {
    return {TaskId(task), JobId(1), MachineId(0), MachineId(from),
            Action::kPreempt};
  }
  static Decision Migrate(uint64_t task, uint64_t from, uint64_t to) {
    return {TaskId(task), JobId(1), MachineId(to), MachineId(from),
            Action::kMigrate};
  }

  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
};

TEST_F(RoundApplyTest, PreemptionFreesRoomForAPlacementListedBeforeIt) {
  Build(1, 2);
  Run(2, 1);
  const std::vector<Decision> round = {Place(1, 1), Preempt(2, 1)};
  cluster::ChangeSet changes;
  const AppliedRound applied = ApplyRound(round, state_, 10, changes);
  EXPECT_EQ(applied.applied, 2u);
  EXPECT_EQ(applied.stale, 0u);
  EXPECT_EQ(applied.placed, 1u);
  EXPECT_EQ(applied.preempted, 1u);
  EXPECT_EQ(Where(1), 1u);
  EXPECT_EQ(Where(2), 0u);
  // Applied in the fixed order: the preemption first.
  ASSERT_EQ(applied.outcomes.size(), 2u);
  EXPECT_EQ(applied.outcomes[0].index, 1u);
  EXPECT_EQ(applied.outcomes[1].index, 0u);
  EXPECT_TRUE(changes.tasks.contains(TaskId(1)));
  EXPECT_TRUE(changes.machines.contains(MachineId(1)));
}

TEST_F(RoundApplyTest, WithinAGroupTasksApplyInIdOrder) {
  Build(1, 3);
  // Both want the one slot; task 2 comes first by id whatever the input.
  const std::vector<Decision> round = {Place(3, 1), Place(2, 1)};
  const AppliedRound applied = ApplyRound(round, state_, 0, changes_);
  EXPECT_EQ(Where(2), 1u);
  EXPECT_EQ(Where(3), 0u);
  EXPECT_EQ(applied.applied, 1u);
  EXPECT_EQ(applied.stale, 1u);
  EXPECT_EQ(applied.outcomes[1].index, 0u);
  EXPECT_FALSE(applied.outcomes[1].applied);
  EXPECT_FALSE(applied.outcomes[1].stale_reason.empty());
}

TEST_F(RoundApplyTest, MigrationChainResolvesWhateverTheOrder) {
  // 1 on m1, 2 on m2, m3 free: 1 -> m2 only fits after 2 -> m3.
  Build(3, 2);
  Run(1, 1);
  Run(2, 2);
  const std::vector<Decision> round = {Migrate(1, 1, 2), Migrate(2, 2, 3)};
  const AppliedRound applied = ApplyRound(round, state_, 0, changes_);
  EXPECT_EQ(applied.migrated, 2u);
  EXPECT_EQ(applied.stale, 0u);
  EXPECT_EQ(Where(1), 2u);
  EXPECT_EQ(Where(2), 3u);
}

TEST_F(RoundApplyTest, MigrationCycleOfFullMachinesStaysStale) {
  Build(2, 2);
  Run(1, 1);
  Run(2, 2);
  const std::vector<Decision> round = {Migrate(1, 1, 2), Migrate(2, 2, 1)};
  const AppliedRound applied = ApplyRound(round, state_, 0, changes_);
  EXPECT_EQ(applied.applied, 0u);
  EXPECT_EQ(applied.stale, 2u);
  for (const DecisionOutcome& outcome : applied.outcomes) {
    EXPECT_THAT(outcome.stale_reason, ::testing::HasSubstr("does not fit"));
  }
  EXPECT_EQ(Where(1), 1u);
  EXPECT_EQ(Where(2), 2u);
}

TEST_F(RoundApplyTest, MigrationsSettleBeforePlacementsTakeTheRoom) {
  // 1 on m1 moves to the free m2, and 2 takes m1: the placement needs the
  // migration first, and the migration must not lose m2 to it.
  Build(2, 2);
  Run(1, 1);
  const std::vector<Decision> round = {Place(2, 1), Migrate(1, 1, 2)};
  const AppliedRound applied = ApplyRound(round, state_, 0, changes_);
  EXPECT_EQ(applied.applied, 2u);
  EXPECT_EQ(Where(1), 2u);
  EXPECT_EQ(Where(2), 1u);
}

TEST_F(RoundApplyTest, StaleDecisionsChangeNothingAndSayWhy) {
  Build(1, 1);
  const std::vector<Decision> round = {
      Place(99, 1),   // unknown task
      Place(1, 42),   // unknown machine
      Preempt(1, 1),  // not running
      {TaskId(1), JobId(1), MachineId(1), MachineId(0), Action::kUnspecified},
  };
  cluster::ChangeSet changes;
  const AppliedRound applied = ApplyRound(round, state_, 0, changes);
  EXPECT_EQ(applied.applied, 0u);
  EXPECT_EQ(applied.stale, 4u);
  for (const DecisionOutcome& outcome : applied.outcomes) {
    EXPECT_FALSE(outcome.applied);
    EXPECT_FALSE(outcome.stale_reason.empty());
  }
  EXPECT_EQ(applied.outcomes.back().stale_reason, "decision without action");
  EXPECT_TRUE(changes.empty());
  EXPECT_EQ(Where(1), 0u);
}

TEST_F(RoundApplyTest, DuplicateDecisionForATaskAppliesOnce) {
  Build(2, 1);
  const std::vector<Decision> round = {Place(1, 1), Place(1, 2)};
  const AppliedRound applied = ApplyRound(round, state_, 0, changes_);
  EXPECT_EQ(applied.applied, 1u);
  EXPECT_EQ(applied.stale, 1u);
  EXPECT_EQ(Where(1), 1u);  // the first of equal keys, as given
}

TEST_F(RoundApplyTest, StartTimeComesFromTheCallerWhenGiven) {
  Build(1, 1);
  const std::vector<Decision> round = {Place(1, 1)};
  ApplyRound(round, state_, 500, changes_,
             [](TaskId) -> int64_t { return 123; });
  EXPECT_EQ(state_.FindTask(TaskId(1))->start_time_us, 123);
}

TEST_F(RoundApplyTest, AppliedPlacementsReportHowLongTheTaskWaited) {
  Build(2, 2);
  Run(2, 2);
  const int64_t submitted = state_.FindTask(TaskId(1))->submit_time_us;
  const std::vector<Decision> round = {Place(1, 1), Preempt(2, 2)};
  const AppliedRound applied =
      ApplyRound(round, state_, submitted + 700, changes_);
  ASSERT_EQ(applied.outcomes.size(), 2u);
  for (const DecisionOutcome& outcome : applied.outcomes) {
    ASSERT_TRUE(outcome.applied) << outcome.stale_reason;
    EXPECT_EQ(outcome.waited_us, outcome.index == 0 ? 700 : 0)
        << "decision " << outcome.index;
  }
}

TEST_F(RoundApplyTest, AppliedPlacementsReportTheDevicesTheStateChose) {
  cluster::MachineAdded gpus;
  gpus.machine = MachineId(9);
  gpus.rack = "r";
  gpus.task_slots = 4;
  cluster::AcceleratorGroup group;
  group.count = 2;
  group.model = "a10";
  gpus.accelerators.push_back(group);
  ASSERT_THAT(state_.Apply(Event(gpus), 0, changes_), IsOk());
  cluster::JobSubmitted job;
  job.job = JobId(2);
  job.name = "g";
  for (uint64_t t = 21; t <= 23; ++t) {
    cluster::TaskSpec spec;
    spec.id = TaskId(t);
    spec.accelerator.whole = 1;
    job.tasks.push_back(spec);
  }
  ASSERT_THAT(state_.Apply(Event(job), 0, changes_), IsOk());
  // Three one-device tasks, two devices: the third is stale.
  const std::vector<Decision> round = {Place(21, 9), Place(22, 9),
                                       Place(23, 9)};
  const AppliedRound applied = ApplyRound(round, state_, 0, changes_);
  EXPECT_EQ(applied.applied, 2u);
  ASSERT_EQ(applied.outcomes[0].devices.size(), 1u);
  ASSERT_EQ(applied.outcomes[1].devices.size(), 1u);
  EXPECT_NE(applied.outcomes[0].devices[0].index,
            applied.outcomes[1].devices[0].index);
  EXPECT_TRUE(applied.outcomes[2].devices.empty());
  EXPECT_FALSE(applied.outcomes[2].stale_reason.empty());
}

// Issue #32: a race at apply time (here: a machine unknown to the state)
// must not leave a gang partial.
TEST_F(RoundApplyTest, AGangLeftShortByAStalePlacementIsTakenBack) {
  Build(3, 0);
  const auto gang = [&](uint64_t job, uint64_t tasks, uint32_t min_members) {
    cluster::JobSubmitted submitted;
    submitted.job = JobId(job);
    submitted.min_members = min_members;
    for (uint64_t t = 1; t <= tasks; ++t) {
      submitted.tasks.push_back({.id = TaskId(job * 10 + t)});
    }
    ASSERT_THAT(state_.Apply(Event(submitted), 0, changes_), IsOk());
  };
  gang(2, 2, 2);
  gang(3, 3, 2);
  const auto place = [](uint64_t job, uint64_t task, uint64_t machine) {
    return Decision{TaskId(task), JobId(job),     MachineId(machine),
                    MachineId(0), Action::kPlace, 2};
  };
  const std::vector<Decision> round = {place(2, 21, 1), place(2, 22, 9),
                                       place(3, 31, 2), place(3, 32, 3),
                                       place(3, 33, 9)};
  cluster::ChangeSet changes;
  const AppliedRound applied = ApplyRound(round, state_, 10, changes);
  // Gang 2 would run 1 of 2: taken back. Gang 3 runs 2 of its 2 needed.
  EXPECT_EQ(Where(21), 0u);
  EXPECT_EQ(state_.FindJob(JobId(2))->running, 0u);
  EXPECT_EQ(state_.FindJob(JobId(3))->running, 2u);
  EXPECT_EQ(applied.applied, 2u);
  EXPECT_EQ(applied.placed, 2u);
  EXPECT_EQ(applied.stale, 3u);
  for (const DecisionOutcome& outcome : applied.outcomes) {
    if (round[outcome.index].task == TaskId(21)) {
      EXPECT_FALSE(outcome.applied);
      EXPECT_THAT(outcome.stale_reason, ::testing::HasSubstr("gang 2"));
      EXPECT_TRUE(outcome.devices.empty());
    }
  }
}

}  // namespace
}  // namespace flowsched::core
