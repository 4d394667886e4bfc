#include "services/cluster/cluster_state.h"

#include <algorithm>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/cluster/resource_fit.h"
#include "services/common/status_matchers.h"

namespace flowsched::cluster {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

ClusterEvent Event(EventBody body) {
  return ClusterEvent{"e", 0, "test", body};
}

// A fresh state restored from `state`'s entities, as RestoreState does.
ClusterState RestoredFrom(const ClusterState& state) {
  ClusterState restored;
  for (const auto& [id, job] : state.jobs()) {
    EXPECT_THAT(restored.RestoreJob(job), IsOk());
  }
  for (const auto& [id, machine] : state.machines()) {
    EXPECT_THAT(restored.RestoreMachine(machine), IsOk());
  }
  for (const auto& [id, task] : state.tasks()) {
    EXPECT_THAT(restored.RestoreTask(task), IsOk());
  }
  return restored;
}

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
  EXPECT_THAT(state_.Apply(Event(MachineAdded{MachineId(1), "r", {}, 1, {}}), 0,
                           changes_),
              StatusIs(absl::StatusCode::kAlreadyExists, "machine 1"));
}

TEST_F(ClusterStateTest, UnknownIdsAreFailedPrecondition) {
  EXPECT_THAT(
      state_.Apply(Event(TaskFinished{JobId(1), TaskId(99)}), 0, changes_),
      StatusIs(absl::StatusCode::kFailedPrecondition, "unknown task"));
  EXPECT_THAT(
      state_.Apply(Event(TaskFinished{JobId(2), TaskId(11)}), 0, changes_),
      StatusIs(absl::StatusCode::kFailedPrecondition, "belongs to job 1"));
  EXPECT_THAT(
      state_.Apply(Event(TaskSubmitted{JobId(9), TaskSpec{.id = TaskId(91),
                                                          .request = {},
                                                          .priority = 0,
                                                          .input = {},
                                                          .input_bytes = 0}}),
                   0, changes_),
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
  ASSERT_THAT(
      state_.Apply(Event(TaskFinished{JobId(1), TaskId(11)}), 0, changes_),
      IsOk());
  EXPECT_EQ(state_.FindMachine(MachineId(1))->free_slots(), 1u);
  EXPECT_EQ(state_.running_task_count(), 0u);
  ASSERT_THAT(
      state_.Apply(Event(TaskKilled{JobId(1), TaskId(12)}), 0, changes_),
      IsOk());
  EXPECT_EQ(state_.FindJob(JobId(1)), nullptr);
  EXPECT_TRUE(changes_.jobs.contains(JobId(1)));
}

TEST_F(ClusterStateTest, GangJobsAreIndexedWhileTheyLive) {
  JobSubmitted gang = Job2(2);
  gang.min_members = 2;
  ASSERT_THAT(state_.Apply(Event(gang), 0, changes_), IsOk());
  EXPECT_THAT(state_.gang_jobs(), ::testing::ElementsAre(JobId(2)));
  EXPECT_THAT(RestoredFrom(state_).gang_jobs(),
              ::testing::ElementsAre(JobId(2)));
  for (uint64_t t : {21, 22}) {
    ASSERT_THAT(
        state_.Apply(Event(TaskKilled{JobId(2), TaskId(t)}), 0, changes_),
        IsOk());
  }
  EXPECT_TRUE(state_.gang_jobs().empty());
}

TEST_F(ClusterStateTest, FailedTaskWaitsAgain) {
  ASSERT_THAT(state_.Place(TaskId(11), MachineId(1), 7, changes_), IsOk());
  ASSERT_THAT(
      state_.Apply(Event(TaskFailed{JobId(1), TaskId(11), "oom"}), 0, changes_),
      IsOk());
  ASSERT_NE(state_.FindTask(TaskId(11)), nullptr);
  EXPECT_FALSE(state_.FindTask(TaskId(11))->running());
  EXPECT_EQ(state_.FindMachine(MachineId(1))->running.size(), 0u);
}

TEST_F(ClusterStateTest, MachineFailureReleasesItsTasks) {
  ASSERT_THAT(state_.Place(TaskId(11), MachineId(1), 7, changes_), IsOk());
  changes_.Clear();
  ASSERT_THAT(
      state_.Apply(Event(MachineFailed{MachineId(1), "power"}), 0, changes_),
      IsOk());
  EXPECT_EQ(state_.machines().size(), 0u);
  EXPECT_EQ(state_.running_task_count(), 0u);
  EXPECT_FALSE(state_.FindTask(TaskId(11))->running());
  EXPECT_TRUE(changes_.tasks.contains(TaskId(11)));
  EXPECT_EQ(state_.total_slots(), 0u);
}

TEST_F(ClusterStateTest, PreemptAndMigrate) {
  ASSERT_THAT(state_.Apply(Event(MachineAdded{MachineId(2), "r", {}, 2, {}}), 0,
                           changes_),
              IsOk());
  ASSERT_THAT(state_.Place(TaskId(11), MachineId(1), 7, changes_), IsOk());
  ASSERT_THAT(
      state_.Migrate(TaskId(11), MachineId(1), MachineId(2), 8, changes_),
      IsOk());
  EXPECT_EQ(state_.FindTask(TaskId(11))->machine, MachineId(2));
  EXPECT_EQ(state_.FindMachine(MachineId(1))->running.size(), 0u);
  EXPECT_THAT(
      state_.Migrate(TaskId(11), MachineId(1), MachineId(2), 8, changes_),
      StatusIs(absl::StatusCode::kFailedPrecondition, "no longer"));
  ASSERT_THAT(state_.Preempt(TaskId(11), changes_), IsOk());
  EXPECT_FALSE(state_.FindTask(TaskId(11))->running());
  EXPECT_THAT(state_.Preempt(TaskId(11), changes_),
              StatusIs(absl::StatusCode::kFailedPrecondition, "not running"));
}

// Job::running follows every way a task starts or stops running.
TEST_F(ClusterStateTest, JobRunningCountFollowsPlacements) {
  const auto running = [&] { return state_.FindJob(JobId(1))->running; };
  ASSERT_THAT(state_.Apply(Event(MachineAdded{MachineId(2), "r", {}, 2, {}}), 0,
                           changes_),
              IsOk());
  EXPECT_EQ(running(), 0u);
  ASSERT_THAT(state_.Place(TaskId(11), MachineId(1), 7, changes_), IsOk());
  ASSERT_THAT(state_.Place(TaskId(12), MachineId(2), 7, changes_), IsOk());
  EXPECT_EQ(running(), 2u);
  ASSERT_THAT(
      state_.Migrate(TaskId(11), MachineId(1), MachineId(2), 8, changes_),
      IsOk());
  EXPECT_EQ(running(), 2u);
  ASSERT_THAT(state_.Preempt(TaskId(11), changes_), IsOk());
  EXPECT_EQ(running(), 1u);
  ASSERT_THAT(
      state_.Apply(Event(MachineFailed{MachineId(2), "power"}), 0, changes_),
      IsOk());
  EXPECT_EQ(running(), 0u);
  ASSERT_THAT(state_.Place(TaskId(11), MachineId(1), 9, changes_), IsOk());
  ASSERT_THAT(
      state_.Apply(Event(TaskFinished{JobId(1), TaskId(11)}), 10, changes_),
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
      state.Apply(Event(TaskSubmitted{JobId(1), TaskSpec{.id = TaskId(13),
                                                         .request = {},
                                                         .priority = 0,
                                                         .input = {},
                                                         .input_bytes = 0}}),
                  0, changes),
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
    EXPECT_THAT(state.RestoreMachine(
                    Machine{.id = MachineId(1), .rack = "r", .task_slots = 10}),
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
    ASSERT_THAT(
        state_.Apply(
            Timed(1, MachineAdded{MachineId(1), "r", {4000, 8000, 0}, 10, {}}),
            0, changes_),
        IsOk());
    ASSERT_THAT(
        state_.Apply(
            Timed(1, MachineAdded{MachineId(2), "r", {4000, 8000, 0}, 10, {}}),
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
              StatusIs(absl::StatusCode::kFailedPrecondition, "(cpu)"));
  ASSERT_THAT(state_.Place(TaskId(3), MachineId(2), 5, changes_), IsOk());
  // Moving task 2 (1000, 6000) beside task 3 (1000, 2000) fills machine 2's
  // memory exactly.
  ASSERT_THAT(
      state_.Migrate(TaskId(2), MachineId(1), MachineId(2), 6, changes_),
      IsOk());
  EXPECT_EQ(Allocated(1), (Resources{3000, 1000, 0}));
  EXPECT_EQ(Allocated(2), (Resources{2000, 8000, 0}));
  // Task 1 (3000, 1000) fits neither machine 2's CPU nor its memory now.
  EXPECT_THAT(
      state_.Migrate(TaskId(1), MachineId(1), MachineId(2), 7, changes_),
      StatusIs(absl::StatusCode::kFailedPrecondition, "(cpu)"));
  EXPECT_EQ(state_.FindTask(TaskId(1))->machine, MachineId(1));
}

TEST_F(ClusterStateResourcesTest, AllocationFollowsUpdatesEndsAndRestores) {
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 5, changes_), IsOk());
  ASSERT_THAT(state_.Place(TaskId(3), MachineId(1), 5, changes_), IsOk());
  ASSERT_THAT(
      state_.Apply(Timed(6, TaskUpdated{JobId(1), TaskId(3), {500, 500, 7}, 0}),
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
  ASSERT_THAT(
      state_.Apply(Timed(7, TaskFinished{JobId(1), TaskId(1)}), 0, changes_),
      IsOk());
  EXPECT_EQ(Allocated(1), (Resources{500, 500, 7}));
  ASSERT_THAT(state_.Preempt(TaskId(3), 8, changes_), IsOk());
  EXPECT_EQ(Allocated(1), (Resources{}));
}

// Machine 1: two a10 GPUs (devices 0, 1) and one t4 (device 2); machine
// 2: one a10. Job 1's tasks: 1 and 2 ask half an a10 each, 3 one whole
// device of any model, 4 two whole a10s, 5 a fraction and 8 "fpga".
class ClusterStateDevicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MachineAdded m1{MachineId(1), "r", {.scalars = {{"fpga", 8}}}, 10, {}};
    m1.accelerators = {{.count = 2, .model = "a10"},
                       {.count = 1, .model = "t4"}};
    MachineAdded m2{MachineId(2), "r", {}, 10, {}};
    m2.accelerators = {{.count = 1, .model = "a10"}};
    ASSERT_THAT(state_.Apply(Timed(1, m1), 0, changes_), IsOk());
    ASSERT_THAT(state_.Apply(Timed(1, m2), 0, changes_), IsOk());
    const std::vector<std::string> a10 = {"a10"};
    // Field by field: g++ 12 -O3 warns (maybe-uninitialized) about a
    // designated initializer that skips a member holding a std::map.
    const auto task = [](uint64_t id, AcceleratorRequest ask) {
      TaskSpec spec;
      spec.id = TaskId(id);
      spec.accelerator = std::move(ask);
      return spec;
    };
    JobSubmitted job{JobId(1), "j", 0, {}};
    job.tasks.push_back(task(1, {.milli = 500, .models = a10}));
    job.tasks.push_back(task(2, {.milli = 500, .models = a10}));
    job.tasks.push_back(task(3, {.whole = 1}));
    job.tasks.push_back(task(4, {.whole = 2, .models = a10}));
    job.tasks.push_back(task(5, {.milli = 250}));
    job.tasks.back().request.scalars.Set("fpga", 8);
    ASSERT_THAT(state_.Apply(Timed(2, job), 0, changes_), IsOk());
  }
  const std::vector<DeviceShare>& Devices(uint64_t task) {
    return state_.FindTask(TaskId(task))->devices;
  }
  const Device& DeviceOf(uint64_t machine, uint32_t index) {
    return state_.FindMachine(MachineId(machine))->devices.at(index);
  }
  ClusterState Restored() { return RestoredFrom(state_); }
  ClusterState state_;
  ChangeSet changes_;
};

TEST_F(ClusterStateDevicesTest, PlaceAssignsDevicesAndNeverOverCommits) {
  using ::testing::ElementsAre;
  EXPECT_EQ(state_.FindMachine(MachineId(1))->devices.size(), 3u);
  EXPECT_EQ(DeviceOf(1, 2).model, "t4");
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 5, changes_), IsOk());
  ASSERT_THAT(state_.Place(TaskId(2), MachineId(1), 5, changes_), IsOk());
  // Best fit: both halves share device 0.
  EXPECT_THAT(Devices(1), ElementsAre(DeviceShare{0, 500}));
  EXPECT_THAT(Devices(2), ElementsAre(DeviceShare{0, 500}));
  EXPECT_EQ(DeviceOf(1, 0).used_milli, 1000);
  EXPECT_THAT(DeviceOf(1, 0).tasks, ElementsAre(TaskId(1), TaskId(2)));
  // Two whole a10s: only device 1 is free on machine 1.
  EXPECT_THAT(
      state_.Place(TaskId(4), MachineId(1), 5, changes_),
      StatusIs(absl::StatusCode::kFailedPrecondition, "(no free a10 device)"));
  EXPECT_TRUE(Devices(4).empty());
  ASSERT_THAT(state_.Place(TaskId(3), MachineId(1), 5, changes_), IsOk());
  EXPECT_THAT(Devices(3), ElementsAre(DeviceShare{1, 1000}));
  // The t4 is left: task 5's fraction goes there, with all the fpga.
  ASSERT_THAT(state_.Place(TaskId(5), MachineId(1), 5, changes_), IsOk());
  EXPECT_THAT(Devices(5), ElementsAre(DeviceShare{2, 250}));
  EXPECT_EQ(state_.FindMachine(MachineId(1))->allocated.scalars.Get("fpga"), 8);
  for (const auto& [id, machine] : state_.machines()) {
    EXPECT_TRUE(WithinCapacity(machine)) << id.value();
  }
}

TEST_F(ClusterStateDevicesTest, EveryWayOffAMachineReleasesItsDevices) {
  using ::testing::ElementsAre;
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 5, changes_), IsOk());
  ASSERT_THAT(state_.Place(TaskId(2), MachineId(1), 5, changes_), IsOk());
  ASSERT_THAT(state_.Place(TaskId(3), MachineId(1), 5, changes_), IsOk());
  ASSERT_THAT(state_.Place(TaskId(5), MachineId(1), 5, changes_), IsOk());
  // Preempt.
  ASSERT_THAT(state_.Preempt(TaskId(1), 6, changes_), IsOk());
  EXPECT_TRUE(Devices(1).empty());
  EXPECT_EQ(DeviceOf(1, 0).used_milli, 500);
  EXPECT_THAT(DeviceOf(1, 0).tasks, ElementsAre(TaskId(2)));
  // Migrate: the task leaves device 0 of machine 1 for device 0 of 2.
  ASSERT_THAT(
      state_.Migrate(TaskId(2), MachineId(1), MachineId(2), 7, changes_),
      IsOk());
  EXPECT_THAT(Devices(2), ElementsAre(DeviceShare{0, 500}));
  EXPECT_EQ(DeviceOf(1, 0).used_milli, 0);
  EXPECT_TRUE(DeviceOf(1, 0).tasks.empty());
  EXPECT_EQ(DeviceOf(2, 0).used_milli, 500);
  // Failure (waits again), kill, finish.
  ASSERT_THAT(
      state_.Apply(Timed(8, TaskFailed{JobId(1), TaskId(3), "x"}), 0, changes_),
      IsOk());
  EXPECT_TRUE(Devices(3).empty());
  EXPECT_EQ(DeviceOf(1, 1).used_milli, 0);
  ASSERT_THAT(
      state_.Apply(Timed(9, TaskKilled{JobId(1), TaskId(5)}), 0, changes_),
      IsOk());
  EXPECT_EQ(DeviceOf(1, 2).used_milli, 0);
  EXPECT_TRUE(state_.FindMachine(MachineId(1))->allocated.scalars.empty());
  // Machine removal: its task waits and holds nothing.
  ASSERT_THAT(
      state_.Apply(Timed(10, MachineRemoved{MachineId(2)}), 0, changes_),
      IsOk());
  EXPECT_FALSE(state_.FindTask(TaskId(2))->running());
  EXPECT_TRUE(Devices(2).empty());
  // Everything free again: the whole pair fits on machine 1.
  ASSERT_THAT(state_.Place(TaskId(4), MachineId(1), 11, changes_), IsOk());
  EXPECT_THAT(Devices(4),
              ElementsAre(DeviceShare{0, 1000}, DeviceShare{1, 1000}));
  ASSERT_THAT(
      state_.Apply(Timed(12, TaskFinished{JobId(1), TaskId(4)}), 0, changes_),
      IsOk());
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(DeviceOf(1, i).used_milli, 0) << i;
    EXPECT_TRUE(DeviceOf(1, i).tasks.empty()) << i;
  }
}

TEST_F(ClusterStateDevicesTest, UpdatesKeepDevicesAndRestoreRebuildsThem) {
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 5, changes_), IsOk());
  ASSERT_THAT(state_.Place(TaskId(3), MachineId(1), 5, changes_), IsOk());
  ASSERT_THAT(state_.Place(TaskId(2), MachineId(2), 5, changes_), IsOk());
  // An update replaces the request, scalars included, and keeps the devices.
  ASSERT_THAT(
      state_.Apply(
          Timed(6, TaskUpdated{JobId(1),
                               TaskId(1),
                               {.cpu_millis = 10, .scalars = {{"fpga", 9}}},
                               0}),
          0, changes_),
      IsOk());
  EXPECT_EQ(state_.FindMachine(MachineId(1))->allocated.scalars.Get("fpga"), 9);
  EXPECT_EQ(Devices(1), (std::vector<DeviceShare>{{0, 500}}));
  // Over-committed by the update (the machine reports what is).
  EXPECT_FALSE(WithinCapacity(*state_.FindMachine(MachineId(1))));

  const ClusterState restored = Restored();
  for (const auto& [id, machine] : state_.machines()) {
    const Machine& back = *restored.FindMachine(id);
    EXPECT_EQ(back.devices, machine.devices) << id.value();
    EXPECT_EQ(back.allocated, machine.allocated) << id.value();
    EXPECT_EQ(back.running, machine.running) << id.value();
  }
  for (const auto& [id, task] : state_.tasks()) {
    EXPECT_EQ(restored.FindTask(id)->devices, task.devices) << id.value();
  }
}

TEST_F(ClusterStateDevicesTest, RestoreRejectsDevicesPlaceCouldNotHaveMade) {
  ASSERT_THAT(state_.Place(TaskId(3), MachineId(1), 5, changes_), IsOk());
  const auto restore_with = [&](uint64_t id, MachineId machine,
                                std::vector<DeviceShare> devices) {
    ClusterState restored;
    EXPECT_THAT(restored.RestoreJob(*state_.FindJob(JobId(1))), IsOk());
    for (const auto& [mid, m] : state_.machines()) {
      EXPECT_THAT(restored.RestoreMachine(m), IsOk());
    }
    EXPECT_THAT(restored.RestoreTask(*state_.FindTask(TaskId(3))), IsOk());
    Task task = *state_.FindTask(TaskId(id));
    task.machine = machine;
    task.devices = std::move(devices);
    return restored.RestoreTask(task);
  };
  EXPECT_THAT(restore_with(1, MachineId(1), {{1, 500}}), IsOk());
  EXPECT_THAT(restore_with(1, MachineId(0), {{1, 500}}),
              StatusIs(absl::StatusCode::kDataLoss, "waits but holds"));
  EXPECT_THAT(restore_with(1, MachineId(1), {}),
              StatusIs(absl::StatusCode::kDataLoss, "accelerator ask"));
  EXPECT_THAT(restore_with(1, MachineId(1), {{7, 500}}),
              StatusIs(absl::StatusCode::kDataLoss, "unknown or out of order"));
  EXPECT_THAT(restore_with(4, MachineId(1), {{1, 1000}, {0, 1000}}),
              StatusIs(absl::StatusCode::kDataLoss, "unknown or out of order"));
  // Task 3 holds device 0 whole (the lowest free): nothing fits beside it.
  EXPECT_THAT(restore_with(1, MachineId(1), {{0, 500}}),
              StatusIs(absl::StatusCode::kDataLoss, "over-committed"));
  // Not what the ask gets: another amount, or a model it does not accept.
  EXPECT_THAT(restore_with(1, MachineId(1), {{1, 400}}),
              StatusIs(absl::StatusCode::kDataLoss, "not what it asks"));
  EXPECT_THAT(restore_with(1, MachineId(1), {{2, 500}}),
              StatusIs(absl::StatusCode::kDataLoss, "does not accept"));
  EXPECT_THAT(restore_with(4, MachineId(1), {{1, 1000}, {2, 1000}}),
              StatusIs(absl::StatusCode::kDataLoss, "does not accept"));
}

// The load index against its definition: every machine with a free slot,
// keyed by its running count.
using LoadKeys = std::vector<std::pair<uint32_t, MachineId>>;

LoadKeys LoadOrderByDefinition(const ClusterState& state) {
  LoadKeys keys;
  for (const auto& [id, machine] : state.machines()) {
    if (machine.free_slots() > 0) {
      keys.emplace_back(static_cast<uint32_t>(machine.running.size()), id);
    }
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

// The index's keys; each entry must point at its machine.
LoadKeys LoadOrderOfIndex(const ClusterState& state) {
  LoadKeys keys;
  for (const ClusterState::OpenMachine& open : state.open_machines_by_load()) {
    EXPECT_EQ(open.machine, state.FindMachine(open.id));
    keys.emplace_back(open.running, open.id);
  }
  return keys;
}

TEST(ClusterStateLoadIndexTest, FollowsEveryWayARunningSetChanges) {
  std::mt19937_64 rng(20261127);
  ClusterState state;
  ChangeSet changes;
  uint64_t next_machine = 1, next_job = 1;
  const auto pick = [&](const auto& map) {
    auto it = map.begin();
    std::advance(it,
                 std::uniform_int_distribution<size_t>(0, map.size() - 1)(rng));
    return it->first;
  };
  for (int step = 0; step < 3000; ++step) {
    const int op = std::uniform_int_distribution<int>(0, 9)(rng);
    if (op == 0 || state.machines().empty()) {
      const auto slots = std::uniform_int_distribution<uint32_t>(0, 4)(rng);
      ASSERT_THAT(
          state.Apply(Event(MachineAdded{
                          MachineId(next_machine++), "r", {}, slots, {}}),
                      step, changes),
          IsOk());
    } else if (op == 1 || state.tasks().empty()) {
      ASSERT_THAT(state.Apply(Event(Job2(next_job++)), step, changes), IsOk());
    } else if (op <= 5) {
      // Place or migrate; refusals (full machine, already there) are fine.
      const TaskId task = pick(state.tasks());
      const MachineId to = pick(state.machines());
      const Task* t = state.FindTask(task);
      if (t->running()) {
        (void)state.Migrate(task, t->machine, to, step, changes);
      } else {
        (void)state.Place(task, to, step, changes);
      }
    } else if (op == 6) {
      (void)state.Preempt(pick(state.tasks()), step, changes);
    } else if (op == 7) {
      const Task* t = state.FindTask(pick(state.tasks()));
      ASSERT_THAT(
          state.Apply(Event(TaskFinished{t->job, t->spec.id}), step, changes),
          IsOk());
    } else if (op == 8 && state.machines().size() > 3) {
      ASSERT_THAT(state.Apply(Event(MachineFailed{pick(state.machines()), "x"}),
                              step, changes),
                  IsOk());
    }
    ASSERT_EQ(LoadOrderOfIndex(state), LoadOrderByDefinition(state))
        << "after step " << step << " (op " << op << ")";
  }
  EXPECT_GT(state.running_task_count(), 0u);
  ClusterState restored = RestoredFrom(state);
  EXPECT_EQ(LoadOrderOfIndex(restored), LoadOrderOfIndex(state));
  // A move keeps the machines, so the index stays valid.
  const ClusterState moved = std::move(restored);
  EXPECT_EQ(LoadOrderOfIndex(moved), LoadOrderOfIndex(state));
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
