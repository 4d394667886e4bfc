#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/baselines/baseline_scheduler.h"
#include "services/baselines/filter_score_scheduler.h"
#include "services/baselines/greedy_scheduler.h"
#include "services/baselines/scheduling_util.h"
#include "services/common/byte_units.h"
#include "services/common/status_matchers.h"

namespace flowsched::baselines {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;
using ::testing::UnorderedElementsAre;

using cluster::ClusterEvent;
using cluster::ClusterState;
using cluster::DataLocality;
using cluster::Resources;
using cluster::TaskSpec;

class StateBuilder {
 public:
  StateBuilder& Machine(uint64_t id, std::string rack, uint32_t slots,
                        Resources capacity = {}) {
    EXPECT_THAT(Apply(cluster::MachineAdded{
                    MachineId(id), std::move(rack), capacity, slots, {}}),
                IsOk());
    return *this;
  }
  // Task ids must ascend in submission order; they are the queue order.
  StateBuilder& Job(uint64_t id, std::vector<TaskSpec> tasks) {
    EXPECT_THAT(
        Apply(cluster::JobSubmitted{JobId(id), "j", 0, std::move(tasks)}),
        IsOk());
    return *this;
  }
  StateBuilder& Run(uint64_t task, uint64_t machine) {
    EXPECT_THAT(state_.Place(TaskId(task), MachineId(machine), 0, changes_),
                IsOk());
    return *this;
  }
  ClusterState& state() { return state_; }

 private:
  absl::Status Apply(cluster::EventBody body) {
    return state_.Apply(ClusterEvent{"e", 0, "test", std::move(body)}, 0,
                        changes_);
  }
  ClusterState state_;
  cluster::ChangeSet changes_;
};

TaskSpec Task(uint64_t id, std::vector<DataLocality> input = {},
              Resources request = {}) {
  TaskSpec spec;
  spec.id = TaskId(id);
  spec.request = request;
  spec.input = std::move(input);
  for (const DataLocality& d : spec.input) spec.input_bytes += d.bytes;
  return spec;
}

DataLocality OnMachine(uint64_t machine, int64_t bytes) {
  return DataLocality{MachineId(machine), "", bytes};
}

BaselinePlacement P(uint64_t task, uint64_t machine) {
  return {TaskId(task), MachineId(machine)};
}

TEST(MakeBaselineTest, KnownNamesAndError) {
  for (std::string_view name : BaselineNames()) {
    auto scheduler = MakeBaseline(name);
    ASSERT_THAT(scheduler, IsOk());
    EXPECT_EQ((*scheduler)->name(), name);
  }
  EXPECT_THAT(MakeBaseline("quincy"),
              StatusIs(absl::StatusCode::kInvalidArgument, "quincy"));
}

TEST(GreedyTest, MachineQueueBeatsClusterQueue) {
  StateBuilder b;
  b.Machine(1, "a", 1).Machine(2, "b", 1);
  // 11 is first in the cluster queue, but each machine has its own taker.
  b.Job(1, {Task(11), Task(12, {OnMachine(2, 100)}),
            Task(13, {OnMachine(1, 100)})});
  GreedyScheduler g(/*fair=*/false);
  EXPECT_THAT(g.Schedule(b.state()), UnorderedElementsAre(P(13, 1), P(12, 2)));
}

TEST(GreedyTest, FallsBackToRackThenCluster) {
  StateBuilder b;
  b.Machine(1, "a", 1).Machine(2, "a", 1).Machine(3, "b", 1);
  b.Job(1, {Task(11)}).Run(11, 1);  // machine 1 is full
  b.Job(2, {Task(21, {OnMachine(1, 100)}), Task(22, {OnMachine(1, 100)}),
            Task(23)});
  GreedyScheduler g(/*fair=*/false);
  // Machine 2 takes 21 from rack a's queue; machine 3 (rack b, no local
  // work) takes the head of the cluster queue, 22 (21 has left it).
  EXPECT_THAT(g.Schedule(b.state()),
              ::testing::ElementsAre(P(21, 2), P(22, 3)));
}

TEST(GreedyTest, SmallInputsAreNoPreference) {
  StateBuilder b;
  b.Machine(1, "a", 1).Machine(2, "b", 1);
  TaskSpec small = Task(12, {OnMachine(1, 5)});
  small.input_bytes = 100;  // 5% < δ^c and δ^r
  b.Job(1, {Task(11), small});
  GreedyScheduler g(/*fair=*/false);
  EXPECT_THAT(g.Schedule(b.state()),
              ::testing::ElementsAre(P(11, 1), P(12, 2)));
}

TEST(GreedyTest, SkipsTasksThatDoNotFitResources) {
  StateBuilder b;
  b.Machine(1, "a", 2, {.cpu_millis = 1000});
  b.Job(1,
        {Task(11, {}, {.cpu_millis = 2000}), Task(12, {}, {.cpu_millis = 600}),
         Task(13, {}, {.cpu_millis = 600})});
  GreedyScheduler g(/*fair=*/false);
  EXPECT_THAT(g.Schedule(b.state()), ::testing::ElementsAre(P(12, 1)));
}

// The baselines book devices as ClusterState::Place does (FitTask), so a
// batch never hands one whole device to two tasks, and every placement of
// the batch applies.
TEST(BaselineDevicesTest, EveryBaselineHonoursDevicesAndScalars) {
  for (std::string_view name : BaselineNames()) {
    StateBuilder b;
    cluster::MachineAdded gpu{MachineId(1), "a", {}, 4, {}};
    gpu.accelerators = {{.count = 1, .model = "a10"}};
    cluster::MachineAdded plain{MachineId(2), "a", {}, 4, {}};
    plain.capacity.scalars.Set("ephemeral-storage", 100);
    ClusterState& state = b.state();
    cluster::ChangeSet changes;
    ASSERT_THAT(state.Apply(ClusterEvent{"e", 0, "t", gpu}, 0, changes),
                IsOk());
    ASSERT_THAT(state.Apply(ClusterEvent{"e", 0, "t", plain}, 0, changes),
                IsOk());
    TaskSpec whole1 = Task(11);
    whole1.accelerator.whole = 1;
    TaskSpec whole2 = Task(12);
    whole2.accelerator.whole = 1;
    whole2.accelerator.models = std::vector<std::string>{"a10"};
    TaskSpec disk = Task(13);
    disk.request.scalars.Set("ephemeral-storage", 60);
    TaskSpec disk2 = disk;
    disk2.id = TaskId(14);
    b.Job(1, {whole1, whole2, disk, disk2});
    auto scheduler = MakeBaseline(name);
    ASSERT_THAT(scheduler, IsOk());
    const std::vector<BaselinePlacement> batch = (*scheduler)->Schedule(state);
    // One GPU task on machine 1, one disk task on machine 2, no more.
    ASSERT_EQ(batch.size(), 2u) << name;
    for (const BaselinePlacement& p : batch) {
      EXPECT_EQ(p.machine, MachineId(p.task.value() <= 12 ? 1 : 2)) << name;
      EXPECT_THAT(state.Place(p.task, p.machine, 1, changes), IsOk()) << name;
    }
    for (const auto& [id, machine] : state.machines()) {
      EXPECT_TRUE(cluster::WithinCapacity(machine)) << name;
    }
  }
}

TEST(FairSharesTest, WaterFillsLeftover) {
  StateBuilder b;
  b.Machine(1, "a", 10);
  b.Job(1, {Task(11)});
  b.Job(2, {Task(21), Task(22), Task(23), Task(24), Task(25)});
  std::vector<TaskSpec> big;
  for (uint64_t i = 0; i < 20; ++i) big.push_back(Task(300 + i));
  b.Job(3, big);
  // M=10, K=3: A* = {1, 3, 3}; leftover 3 -> +1 each to jobs 2 and 3, the
  // last slot to job 2 (lowest id).
  EXPECT_THAT(FairShares(b.state()),
              UnorderedElementsAre(::testing::Pair(JobId(1), 1),
                                   ::testing::Pair(JobId(2), 5),
                                   ::testing::Pair(JobId(3), 4)));
}

TEST(FairSharesTest, ShareNeverExceedsDemand) {
  StateBuilder b;
  b.Machine(1, "a", 10);
  b.Job(1, {Task(11)}).Job(2, {Task(21), Task(22)});
  EXPECT_THAT(FairShares(b.state()),
              UnorderedElementsAre(::testing::Pair(JobId(1), 1),
                                   ::testing::Pair(JobId(2), 2)));
}

TEST(GreedyFairTest, RespectsShares) {
  StateBuilder b;
  b.Machine(1, "a", 2).Machine(2, "a", 2);  // M = 4
  b.Job(1, {Task(11), Task(12), Task(13), Task(14), Task(15), Task(16)});
  b.Job(2, {Task(21)});
  // A_1 = 2 + 1 leftover = 3, A_2 = 1.
  GreedyScheduler g(/*fair=*/false);
  EXPECT_THAT(g.Schedule(b.state()),
              ::testing::ElementsAre(P(11, 1), P(12, 1), P(13, 2), P(14, 2)));
  GreedyScheduler gf(/*fair=*/true);
  EXPECT_THAT(gf.Schedule(b.state()),
              ::testing::ElementsAre(P(11, 1), P(12, 1), P(13, 2), P(21, 2)));
}

TEST(GreedyFairTest, JobOverShareIsBlockedNotKilled) {
  StateBuilder b;
  b.Machine(1, "a", 4);
  b.Job(1, {Task(11), Task(12), Task(13), Task(14)});
  b.Run(11, 1).Run(12, 1).Run(13, 1);
  b.Job(2, {Task(21)});
  // A_1 = 3 (2 + leftover 1), A_2 = 1: job 1 is at its share, so the last
  // slot goes to job 2 even though 14 is older.
  GreedyScheduler gf(/*fair=*/true);
  EXPECT_THAT(gf.Schedule(b.state()), ::testing::ElementsAre(P(21, 1)));
}

TEST(FilterScoreTest, SpreadsByLeastAllocated) {
  StateBuilder b;
  const Resources cap{.cpu_millis = 4000, .memory_bytes = 4 * kGiB};
  b.Machine(1, "a", 4, cap).Machine(2, "a", 4, cap);
  const Resources req{.cpu_millis = 1000, .memory_bytes = kGiB};
  b.Job(1, {Task(11, {}, req), Task(12, {}, req), Task(13, {}, req),
            Task(14, {}, req)});
  FilterScoreScheduler fs;
  EXPECT_THAT(fs.Schedule(b.state()),
              ::testing::ElementsAre(P(11, 1), P(12, 2), P(13, 1), P(14, 2)));
}

TEST(FilterScoreTest, SlotsWhenNoCapacityReported) {
  StateBuilder b;
  b.Machine(1, "a", 2).Machine(2, "a", 2);
  b.Job(1, {Task(11), Task(12)}).Run(11, 1);
  FilterScoreScheduler fs;
  EXPECT_THAT(fs.Schedule(b.state()), ::testing::ElementsAre(P(12, 2)));
}

TEST(FilterScoreTest, NeverOverCommits) {
  StateBuilder b;
  const Resources cap{.cpu_millis = 2000, .memory_bytes = 8 * kGiB};
  b.Machine(1, "a", 10, cap).Machine(2, "a", 10, cap);
  const Resources req{.cpu_millis = 1500, .memory_bytes = kGiB};
  b.Job(1, {Task(11, {}, req), Task(12, {}, req), Task(13, {}, req)});
  FilterScoreScheduler fs;
  EXPECT_THAT(fs.Schedule(b.state()),
              ::testing::ElementsAre(P(11, 1), P(12, 2)));
}

TEST(FilterScoreTest, LocalityBreaksEvenLoad) {
  StateBuilder b;
  b.Machine(1, "a", 1).Machine(2, "b", 1).Machine(3, "b", 1);
  b.Job(1, {Task(11, {OnMachine(3, 100)})});
  FilterScoreScheduler fs;
  EXPECT_THAT(fs.Schedule(b.state()), ::testing::ElementsAre(P(11, 3)));
}

// Random states with partial occupancy, unreported dimensions, oversized
// requests and locality on machines and racks.
ClusterState RandomState(uint32_t seed) {
  std::mt19937 rng(seed);
  const auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  StateBuilder b;
  const int64_t machines = uniform(1, 8);
  for (int64_t m = 1; m <= machines; ++m) {
    Resources cap;
    if (uniform(0, 3) != 0) cap.cpu_millis = uniform(1, 8) * 1000;
    if (uniform(0, 3) != 0) cap.memory_bytes = uniform(1, 8) * kGiB;
    b.Machine(static_cast<uint64_t>(m), absl::StrCat("r", uniform(0, 2)),
              static_cast<uint32_t>(uniform(1, 4)), cap);
  }
  const int64_t jobs = uniform(1, 4);
  uint64_t next_task = 1;
  for (int64_t j = 1; j <= jobs; ++j) {
    std::vector<TaskSpec> tasks;
    const int64_t n = uniform(1, 10);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<DataLocality> input;
      const int64_t entries = uniform(0, 3);
      for (int64_t e = 0; e < entries; ++e) {
        if (uniform(0, 1) == 0) {
          input.push_back(OnMachine(static_cast<uint64_t>(uniform(1, machines)),
                                    uniform(1, 100)));
        } else {
          input.push_back(DataLocality{
              MachineId(0), absl::StrCat("r", uniform(0, 2)), uniform(1, 100)});
        }
      }
      const Resources req{.cpu_millis = uniform(0, 3000),
                          .memory_bytes = uniform(0, 3) * kGiB};
      tasks.push_back(Task(next_task++, std::move(input), req));
    }
    b.Job(static_cast<uint64_t>(j), std::move(tasks));
  }
  // Occupy some capacity; failures just mean the task stays waiting.
  cluster::ChangeSet changes;
  for (const auto& [id, task] : b.state().tasks()) {
    if (uniform(0, 2) == 0) {
      (void)b.state().Place(
          id, MachineId(static_cast<uint64_t>(uniform(1, machines))), 0,
          changes);
    }
  }
  return std::move(b.state());
}

class InvariantTest : public ::testing::TestWithParam<std::string> {};

TEST_P(InvariantTest, PlacementsApplyAndConserveWork) {
  for (uint32_t seed = 0; seed < 300; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    ClusterState state = RandomState(seed);
    const std::map<JobId, int64_t> shares = FairShares(state);
    std::map<JobId, int64_t> running_before;
    for (const auto& [id, task] : state.tasks()) {
      if (task.running()) ++running_before[task.job];
    }
    auto scheduler = MakeBaseline(GetParam());
    ASSERT_THAT(scheduler, IsOk());
    const std::vector<BaselinePlacement> placements =
        (*scheduler)->Schedule(state);
    cluster::ChangeSet changes;
    for (const BaselinePlacement& p : placements) {
      ASSERT_THAT(state.Place(p.task, p.machine, 1, changes), IsOk());
    }
    if (GetParam() == "greedy-fair") {
      std::map<JobId, int64_t> running_after;
      for (const auto& [id, task] : state.tasks()) {
        if (task.running()) ++running_after[task.job];
      }
      for (const auto& [job, count] : running_after) {
        // No killing: a job over its share keeps what it had, nothing more.
        EXPECT_LE(count, std::max(shares.at(job), running_before[job]))
            << "job " << job;
      }
      continue;
    }
    for (const auto& [task_id, task] : state.tasks()) {
      if (task.running()) continue;
      for (const auto& [machine_id, machine] : state.machines()) {
        EXPECT_FALSE(CanPlace(machine, task))
            << "task " << task_id << " still fits machine " << machine_id;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllBaselines, InvariantTest,
                         ::testing::Values("greedy", "greedy-fair",
                                           "filter-score"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           std::erase(name, '-');
                           return name;
                         });

}  // namespace
}  // namespace flowsched::baselines
