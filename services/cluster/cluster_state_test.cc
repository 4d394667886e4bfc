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

}  // namespace
}  // namespace flowsched::cluster
