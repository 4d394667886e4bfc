#include "services/cluster/cluster_state.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"

namespace flowsched::cluster {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

ClusterEvent Event(EventBody body) { return ClusterEvent{"e", 0, "test", body}; }

JobSubmitted Job2(uint64_t job) {
  JobSubmitted j{JobId(job), "j", 0, {}};
  j.tasks.push_back(TaskSpec{TaskId(job * 10 + 1), {}, 0, {}, 0});
  j.tasks.push_back(TaskSpec{TaskId(job * 10 + 2), {}, 0, {}, 0});
  return j;
}

class ClusterStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_THAT(state_.Apply(Event(MachineAdded{MachineId(1), "r", {}, 1, {}}),
                             0, changes_),
                IsOk());
    ASSERT_THAT(state_.Apply(Event(Job2(1)), 5, changes_), IsOk());
    changes_.Clear();
  }
  ClusterState state_;
  ChangeSet changes_;
};

TEST_F(ClusterStateTest, JobSubmissionAddsWaitingTasks) {
  EXPECT_EQ(state_.tasks().size(), 2u);
  EXPECT_EQ(state_.waiting_task_count(), 2u);
  EXPECT_EQ(state_.FindTask(TaskId(11))->submit_time_us, 5);
  EXPECT_EQ(state_.total_slots(), 1u);
}

TEST_F(ClusterStateTest, DuplicatesAreRejectedWithoutPartialState) {
  JobSubmitted dup = Job2(2);
  dup.tasks[1].id = TaskId(11);  // belongs to job 1 already
  EXPECT_THAT(state_.Apply(Event(dup), 0, changes_),
              StatusIs(absl::StatusCode::kAlreadyExists, "task 11"));
  EXPECT_EQ(state_.FindJob(JobId(2)), nullptr);
  EXPECT_EQ(state_.FindTask(TaskId(21)), nullptr);
  EXPECT_TRUE(changes_.empty());
  EXPECT_THAT(state_.Apply(Event(Job2(1)), 0, changes_),
              StatusIs(absl::StatusCode::kAlreadyExists, "job 1"));
  EXPECT_THAT(
      state_.Apply(Event(MachineAdded{MachineId(1), "r", {}, 1, {}}), 0,
                   changes_),
      StatusIs(absl::StatusCode::kAlreadyExists, "machine 1"));
}

TEST_F(ClusterStateTest, UnknownIdsAreFailedPrecondition) {
  EXPECT_THAT(state_.Apply(Event(TaskFinished{JobId(1), TaskId(99)}), 0,
                           changes_),
              StatusIs(absl::StatusCode::kFailedPrecondition, "unknown task"));
  EXPECT_THAT(state_.Apply(Event(TaskFinished{JobId(2), TaskId(11)}), 0,
                           changes_),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "belongs to job 1"));
  EXPECT_THAT(
      state_.Apply(Event(TaskSubmitted{JobId(9), TaskSpec{.id = TaskId(91), .request = {}, .priority = 0, .input = {}, .input_bytes = 0}}), 0,
                   changes_),
      StatusIs(absl::StatusCode::kFailedPrecondition, "unknown job 9"));
  EXPECT_THAT(state_.Apply(Event(MachineRemoved{MachineId(8)}), 0, changes_),
              StatusIs(absl::StatusCode::kFailedPrecondition, "machine 8"));
  EXPECT_EQ(state_.tasks().size(), 2u);
}

TEST_F(ClusterStateTest, PlaceRespectsSlotsAndStaleness) {
  ASSERT_THAT(state_.Place(TaskId(11), MachineId(1), 7, changes_), IsOk());
  EXPECT_EQ(state_.running_task_count(), 1u);
  EXPECT_TRUE(changes_.machines.contains(MachineId(1)));
  // The only slot is taken.
  EXPECT_THAT(state_.Place(TaskId(12), MachineId(1), 7, changes_),
              StatusIs(absl::StatusCode::kFailedPrecondition, "no free slot"));
  EXPECT_THAT(state_.Place(TaskId(11), MachineId(1), 7, changes_),
              StatusIs(absl::StatusCode::kFailedPrecondition, "already runs"));
  EXPECT_THAT(state_.Place(TaskId(77), MachineId(1), 7, changes_),
              StatusIs(absl::StatusCode::kFailedPrecondition, "gone"));
}

TEST_F(ClusterStateTest, FinishingFreesTheSlotAndLastTaskEndsTheJob) {
  ASSERT_THAT(state_.Place(TaskId(11), MachineId(1), 7, changes_), IsOk());
  ASSERT_THAT(state_.Apply(Event(TaskFinished{JobId(1), TaskId(11)}), 0,
                           changes_),
              IsOk());
  EXPECT_EQ(state_.FindMachine(MachineId(1))->free_slots(), 1u);
  EXPECT_EQ(state_.running_task_count(), 0u);
  ASSERT_THAT(state_.Apply(Event(TaskKilled{JobId(1), TaskId(12)}), 0,
                           changes_),
              IsOk());
  EXPECT_EQ(state_.FindJob(JobId(1)), nullptr);
  EXPECT_TRUE(changes_.jobs.contains(JobId(1)));
}

TEST_F(ClusterStateTest, FailedTaskWaitsAgain) {
  ASSERT_THAT(state_.Place(TaskId(11), MachineId(1), 7, changes_), IsOk());
  ASSERT_THAT(state_.Apply(Event(TaskFailed{JobId(1), TaskId(11), "oom"}), 0,
                           changes_),
              IsOk());
  ASSERT_NE(state_.FindTask(TaskId(11)), nullptr);
  EXPECT_FALSE(state_.FindTask(TaskId(11))->running());
  EXPECT_EQ(state_.FindMachine(MachineId(1))->running.size(), 0u);
}

TEST_F(ClusterStateTest, MachineFailureReleasesItsTasks) {
  ASSERT_THAT(state_.Place(TaskId(11), MachineId(1), 7, changes_), IsOk());
  changes_.Clear();
  ASSERT_THAT(state_.Apply(Event(MachineFailed{MachineId(1), "power"}), 0,
                           changes_),
              IsOk());
  EXPECT_EQ(state_.machines().size(), 0u);
  EXPECT_EQ(state_.running_task_count(), 0u);
  EXPECT_FALSE(state_.FindTask(TaskId(11))->running());
  EXPECT_TRUE(changes_.tasks.contains(TaskId(11)));
  EXPECT_EQ(state_.total_slots(), 0u);
}

TEST_F(ClusterStateTest, PreemptAndMigrate) {
  ASSERT_THAT(state_.Apply(Event(MachineAdded{MachineId(2), "r", {}, 2, {}}),
                           0, changes_),
              IsOk());
  ASSERT_THAT(state_.Place(TaskId(11), MachineId(1), 7, changes_), IsOk());
  ASSERT_THAT(state_.Migrate(TaskId(11), MachineId(1), MachineId(2), 8,
                             changes_),
              IsOk());
  EXPECT_EQ(state_.FindTask(TaskId(11))->machine, MachineId(2));
  EXPECT_EQ(state_.FindMachine(MachineId(1))->running.size(), 0u);
  EXPECT_THAT(state_.Migrate(TaskId(11), MachineId(1), MachineId(2), 8,
                             changes_),
              StatusIs(absl::StatusCode::kFailedPrecondition, "no longer"));
  ASSERT_THAT(state_.Preempt(TaskId(11), changes_), IsOk());
  EXPECT_FALSE(state_.FindTask(TaskId(11))->running());
  EXPECT_THAT(state_.Preempt(TaskId(11), changes_),
              StatusIs(absl::StatusCode::kFailedPrecondition, "not running"));
}

// Job::running follows every way a task starts or stops running.
TEST_F(ClusterStateTest, JobRunningCountFollowsPlacements) {
  const auto running = [&] { return state_.FindJob(JobId(1))->running; };
  ASSERT_THAT(state_.Apply(Event(MachineAdded{MachineId(2), "r", {}, 2, {}}),
                           0, changes_),
              IsOk());
  EXPECT_EQ(running(), 0u);
  ASSERT_THAT(state_.Place(TaskId(11), MachineId(1), 7, changes_), IsOk());
  ASSERT_THAT(state_.Place(TaskId(12), MachineId(2), 7, changes_), IsOk());
  EXPECT_EQ(running(), 2u);
  ASSERT_THAT(state_.Migrate(TaskId(11), MachineId(1), MachineId(2), 8,
                             changes_),
              IsOk());
  EXPECT_EQ(running(), 2u);
  ASSERT_THAT(state_.Preempt(TaskId(11), changes_), IsOk());
  EXPECT_EQ(running(), 1u);
  ASSERT_THAT(state_.Apply(Event(MachineFailed{MachineId(2), "power"}), 0,
                           changes_),
              IsOk());
  EXPECT_EQ(running(), 0u);
  ASSERT_THAT(state_.Place(TaskId(11), MachineId(1), 9, changes_), IsOk());
  ASSERT_THAT(state_.Apply(Event(TaskFinished{JobId(1), TaskId(11)}), 10,
                           changes_),
              IsOk());
  EXPECT_EQ(running(), 0u);
  EXPECT_EQ(state_.running_task_count(), 0u);
}

TEST_F(ClusterStateTest, TaskLimitPerJobHoldsForLateSubmissions) {
  ValidationLimits limits;
  limits.max_tasks_per_job = 2;
  ClusterState state(limits);
  ChangeSet changes;
  ASSERT_THAT(state.Apply(Event(Job2(1)), 0, changes), IsOk());
  EXPECT_THAT(
      state.Apply(Event(TaskSubmitted{JobId(1), TaskSpec{.id = TaskId(13), .request = {}, .priority = 0, .input = {}, .input_bytes = 0}}), 0,
                  changes),
      StatusIs(absl::StatusCode::kInvalidArgument, "limit is 2"));
}

TEST_F(ClusterStateTest, RestoreRejectsInconsistentRecords) {
  ClusterState state;
  Task orphan;
  orphan.spec.id = TaskId(1);
  orphan.job = JobId(5);
  EXPECT_THAT(state.RestoreTask(orphan),
              StatusIs(absl::StatusCode::kDataLoss, "unknown job"));
  ASSERT_THAT(state.RestoreJob(Job{JobId(5), "j", 0, {}}), IsOk());
  orphan.machine = MachineId(3);
  EXPECT_THAT(state.RestoreTask(orphan),
              StatusIs(absl::StatusCode::kDataLoss, "machine 3"));
}

// Restores normally come in ascending id order (the store's key order); any
// other order, and duplicates in it, must give the same result.
TEST_F(ClusterStateTest, RestoreInAnyOrderRebuildsTheSameState) {
  const auto restore = [](const std::vector<uint64_t>& ids) {
    ClusterState state;
    EXPECT_THAT(state.RestoreJob(Job{JobId(1), "j", 0, {}}), IsOk());
    EXPECT_THAT(state.RestoreMachine(Machine{.id = MachineId(1),
                                             .rack = "r",
                                             .task_slots = 10}),
                IsOk());
    for (uint64_t id : ids) {
      Task task;
      task.spec.id = TaskId(id);
      task.job = JobId(1);
      if (id % 2 == 0) task.machine = MachineId(1);  // even ids run
      EXPECT_THAT(state.RestoreTask(task), IsOk()) << id;
    }
    return state;
  };
  const ClusterState ascending = restore({1, 2, 3, 4, 5, 6});
  const ClusterState shuffled = restore({4, 1, 6, 3, 2, 5});
  for (const ClusterState* state : {&ascending, &shuffled}) {
    std::vector<uint64_t> tasks, job_tasks, running;
    for (const auto& [id, task] : state->tasks()) tasks.push_back(id.value());
    for (TaskId id : state->FindJob(JobId(1))->tasks) {
      job_tasks.push_back(id.value());
    }
    for (TaskId id : state->FindMachine(MachineId(1))->running) {
      running.push_back(id.value());
    }
    EXPECT_THAT(tasks, ::testing::ElementsAre(1, 2, 3, 4, 5, 6));
    EXPECT_THAT(job_tasks, ::testing::ElementsAre(1, 2, 3, 4, 5, 6));
    EXPECT_THAT(running, ::testing::ElementsAre(2, 4, 6));
    EXPECT_EQ(state->running_task_count(), 3u);
    EXPECT_EQ(state->FindJob(JobId(1))->running, 3u);
  }
  ClusterState state = restore({1, 3});
  for (uint64_t id : {1, 3}) {
    Task duplicate;
    duplicate.spec.id = TaskId(id);
    duplicate.job = JobId(1);
    EXPECT_THAT(state.RestoreTask(duplicate),
                StatusIs(absl::StatusCode::kDataLoss, "duplicate"));
  }
  EXPECT_EQ(state.tasks().size(), 2u);
}

}  // namespace
}  // namespace flowsched::cluster

namespace flowsched::cluster {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

ClusterEvent Timed(int64_t time_us, EventBody body) {
  return ClusterEvent{"e", time_us, "test", body};
}

// Quincy's nu and theta (SOSP 2009, Appendix) are cumulative across kills.
TEST(ClusterStateTimesTest, WaitAndRunTimesAccumulateAcrossKills) {
  ClusterState state;
  ChangeSet changes;
  ASSERT_THAT(state.Apply(Timed(0, MachineAdded{MachineId(1), "r", {}, 1, {}}),
                          0, changes),
              IsOk());
  JobSubmitted job{JobId(1), "j", 0, {}};
  job.tasks.push_back({.id = TaskId(1)});
  ASSERT_THAT(state.Apply(Timed(100, job), 0, changes), IsOk());
  const Task& task = *state.FindTask(TaskId(1));
  EXPECT_EQ(task.WaitMicros(150), 50);
  EXPECT_EQ(task.RunMicros(150), 0);
  ASSERT_THAT(state.Place(TaskId(1), MachineId(1), 200, changes), IsOk());
  EXPECT_EQ(task.WaitMicros(1000), 100);  // frozen while running
  EXPECT_EQ(task.RunMicros(260), 60);
  ASSERT_THAT(state.Preempt(TaskId(1), 300, changes), IsOk());
  EXPECT_EQ(task.RunMicros(1000), 100);  // frozen while waiting
  EXPECT_EQ(task.WaitMicros(350), 150);
  ASSERT_THAT(state.Place(TaskId(1), MachineId(1), 400, changes), IsOk());
  // A failure is a kill too: the run so far counts.
  ASSERT_THAT(
      state.Apply(Timed(450, TaskFailed{JobId(1), TaskId(1), "x"}), 0, changes),
      IsOk());
  EXPECT_EQ(task.RunMicros(1000), 150);
  EXPECT_EQ(task.WaitMicros(460), 210);
  ASSERT_THAT(state.Place(TaskId(1), MachineId(1), 500, changes), IsOk());
  ASSERT_THAT(
      state.Apply(Timed(520, MachineFailed{MachineId(1), "x"}), 0, changes),
      IsOk());
  EXPECT_EQ(task.RunMicros(1000), 170);
  EXPECT_EQ(task.WaitMicros(530), 260);
  // Without an explicit time, Preempt uses the latest time seen.
  EXPECT_EQ(state.last_time_us(), 520);
}

TEST(ClusterStateTimesTest, MigrationKeepsRunningTimeAndAddsNoWait) {
  ClusterState state;
  ChangeSet changes;
  for (uint64_t m = 1; m <= 2; ++m) {
    ASSERT_THAT(
        state.Apply(Timed(1, MachineAdded{MachineId(m), "r", {}, 1, {}}), 0,
                    changes),
        IsOk());
  }
  JobSubmitted job{JobId(1), "j", 0, {}};
  job.tasks.push_back({.id = TaskId(1)});
  ASSERT_THAT(state.Apply(Timed(10, job), 0, changes), IsOk());
  ASSERT_THAT(state.Place(TaskId(1), MachineId(1), 20, changes), IsOk());
  ASSERT_THAT(state.Migrate(TaskId(1), MachineId(1), MachineId(2), 50, changes),
              IsOk());
  const Task& task = *state.FindTask(TaskId(1));
  EXPECT_EQ(task.RunMicros(70), 50);
  EXPECT_EQ(task.WaitMicros(70), 10);
  EXPECT_THAT(state.Migrate(TaskId(1), MachineId(2), MachineId(2), 60, changes),
              StatusIs(absl::StatusCode::kFailedPrecondition, "where it runs"));
}

class ClusterStateResourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_THAT(state_.Apply(Timed(1, MachineAdded{MachineId(1), "r",
                                                   {4000, 8000, 0}, 10, {}}),
                             0, changes_),
                IsOk());
    ASSERT_THAT(state_.Apply(Timed(1, MachineAdded{MachineId(2), "r",
                                                   {4000, 8000, 0}, 10, {}}),
                             0, changes_),
                IsOk());
    JobSubmitted job{JobId(1), "j", 0, {}};
    job.different_machines = true;
    job.tasks.push_back({.id = TaskId(1), .request = {3000, 1000, 0}});
    job.tasks.push_back({.id = TaskId(2), .request = {1000, 6000, 0}});
    job.tasks.push_back({.id = TaskId(3), .request = {1000, 2000, 0}});
    ASSERT_THAT(state_.Apply(Timed(2, job), 0, changes_), IsOk());
  }
  const Resources& Allocated(uint64_t m) {
    return state_.FindMachine(MachineId(m))->allocated;
  }
  ClusterState state_;
  ChangeSet changes_;
};

TEST_F(ClusterStateResourcesTest, JobKeepsDifferentMachinesFlag) {
  EXPECT_TRUE(state_.FindJob(JobId(1))->different_machines);
}

TEST_F(ClusterStateResourcesTest, PlaceRejectsCpuOrMemoryOverCommit) {
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 5, changes_), IsOk());
  ASSERT_THAT(state_.Place(TaskId(2), MachineId(1), 5, changes_), IsOk());
  EXPECT_EQ(Allocated(1), (Resources{4000, 7000, 0}));
  // CPU is full now (4000 of 4000).
  EXPECT_THAT(state_.Place(TaskId(3), MachineId(1), 5, changes_),
              StatusIs(absl::StatusCode::kFailedPrecondition, "CPU or memory"));
  ASSERT_THAT(state_.Place(TaskId(3), MachineId(2), 5, changes_), IsOk());
  // Moving task 2 (1000, 6000) beside task 3 (1000, 2000) fills machine 2's
  // memory exactly.
  ASSERT_THAT(state_.Migrate(TaskId(2), MachineId(1), MachineId(2), 6,
                             changes_),
              IsOk());
  EXPECT_EQ(Allocated(1), (Resources{3000, 1000, 0}));
  EXPECT_EQ(Allocated(2), (Resources{2000, 8000, 0}));
  // Task 1 (3000, 1000) fits neither machine 2's CPU nor its memory now.
  EXPECT_THAT(state_.Migrate(TaskId(1), MachineId(1), MachineId(2), 7,
                             changes_),
              StatusIs(absl::StatusCode::kFailedPrecondition, "CPU or memory"));
  EXPECT_EQ(state_.FindTask(TaskId(1))->machine, MachineId(1));
}

TEST_F(ClusterStateResourcesTest, AllocationFollowsUpdatesEndsAndRestores) {
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 5, changes_), IsOk());
  ASSERT_THAT(state_.Place(TaskId(3), MachineId(1), 5, changes_), IsOk());
  ASSERT_THAT(state_.Apply(Timed(6, TaskUpdated{JobId(1), TaskId(3),
                                                {500, 500, 7}, 0}),
                           0, changes_),
              IsOk());
  EXPECT_EQ(Allocated(1), (Resources{3500, 1500, 7}));
  ClusterState restored;
  ASSERT_THAT(restored.RestoreJob(*state_.FindJob(JobId(1))), IsOk());
  ASSERT_THAT(restored.RestoreMachine(*state_.FindMachine(MachineId(1))),
              IsOk());
  for (const auto& [id, task] : state_.tasks()) {
    ASSERT_THAT(restored.RestoreTask(task), IsOk());
  }
  EXPECT_EQ(restored.FindMachine(MachineId(1))->allocated,
            (Resources{3500, 1500, 7}));
  ASSERT_THAT(state_.Apply(Timed(7, TaskFinished{JobId(1), TaskId(1)}), 0,
                           changes_),
              IsOk());
  EXPECT_EQ(Allocated(1), (Resources{500, 500, 7}));
  ASSERT_THAT(state_.Preempt(TaskId(3), 8, changes_), IsOk());
  EXPECT_EQ(Allocated(1), (Resources{}));
}

TEST(ClusterStateCapacityTest, UnreportedCapacityIsBoundedBySlotsOnly) {
  ClusterState state;
  ChangeSet changes;
  ASSERT_THAT(state.Apply(Timed(1, MachineAdded{MachineId(1), "r", {}, 1, {}}),
                          0, changes),
              IsOk());
  JobSubmitted job{JobId(1), "j", 0, {}};
  job.tasks.push_back({.id = TaskId(1), .request = {3000, 1000, 0}});
  ASSERT_THAT(state.Apply(Timed(2, job), 0, changes), IsOk());
  EXPECT_THAT(state.Place(TaskId(1), MachineId(1), 5, changes), IsOk());
}

}  // namespace
}  // namespace flowsched::cluster
