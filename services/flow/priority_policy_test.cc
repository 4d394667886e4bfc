#include "services/flow/priority_policy.h"

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/flow/policy_test_util.h"

namespace flowsched::flow {
namespace {

using cluster::ClusterEvent;
using ::flowsched::testing::IsOk;

// Two one-slot machines, each running a low-priority task (priorities 1
// and 2). Defaults: wait_cost(p) = 100000 + 10000 p, penalty 5000.
class PriorityPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Apply(cluster::MachineAdded{MachineId(1), "r", {}, 1, {}});
    Apply(cluster::MachineAdded{MachineId(2), "r", {}, 1, {}});
    Submit(1, 1, 1);
    Submit(2, 2, 2);
    Sync();
    ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 1, changes_), IsOk());
    ASSERT_THAT(state_.Place(TaskId(2), MachineId(2), 1, changes_), IsOk());
    Sync();
  }
  void Apply(cluster::EventBody body) {
    ASSERT_THAT(state_.Apply(ClusterEvent{"e", 1, "t", body}, 1, changes_),
                IsOk());
  }
  void Submit(uint64_t job, uint64_t task, int32_t priority) {
    Apply(cluster::JobSubmitted{
        JobId(job), "j", 0, {{.id = TaskId(task), .priority = priority}}});
  }
  void Sync() {
    ASSERT_THAT(policy_.Sync(changes_, state_, SyncContext{1}, builder_),
                IsOk());
    changes_.Clear();
    ASSERT_EQ(network_.total_supply(), 0);
  }
  flow::testing::SolvedRound Round() {
    auto round = flow::testing::SolveNetwork(network_);
    EXPECT_THAT(round, IsOk());
    if (!round.ok()) return {};
    EXPECT_THAT(flow::testing::ApplyRound(*round, state_, 2, changes_), IsOk());
    Sync();
    return *round;
  }
  static bool Unchanged(const flow::testing::SolvedRound& round) {
    for (const TaskPlacement& p : round.placements) {
      if (p.machine_id != p.running_on) return false;
    }
    return true;
  }

  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
  FlowNetwork network_;
  NetworkBuilder builder_{network_};
  PriorityPolicy policy_;
};

TEST_F(PriorityPolicyTest, CostsFollowPriority) {
  const NodeId t1 = builder_.FindTaskNode(TaskId(1));
  const NodeId u1 = builder_.FindJobNode(JobId(1));
  const NodeId x = builder_.cluster_aggregator();
  const NodeId m1 = builder_.FindMachineNode(MachineId(1));
  EXPECT_EQ(network_.FindArc(t1, u1)->cost, 110'000 + 5'000);
  EXPECT_EQ(network_.FindArc(t1, m1)->cost, 0);
  EXPECT_EQ(network_.FindArc(t1, x)->cost, 20'000);
  // m1 is full: X -> m1 only carries slots that running tasks free, at
  // per_task_cost * slots.
  EXPECT_EQ(network_.FindArc(x, m1)->capacity, 1);
  EXPECT_EQ(network_.FindArc(x, m1)->cost, 10);
}

TEST_F(PriorityPolicyTest, NoHigherPriorityDemandMeansNoPreemption) {
  // Nothing waits: nothing moves.
  EXPECT_TRUE(Unchanged(Round()));
  // Task 3 has priority 1, equal to task 1's: preempting task 1 would cost
  // 110000 + 5000 + 10 and save only 110000 (task 2's slot costs more).
  Submit(3, 3, 1);
  Sync();
  auto round = Round();
  EXPECT_TRUE(Unchanged(round));
  EXPECT_EQ(round.machine_of[3], 0u);
}

TEST_F(PriorityPolicyTest, HigherPriorityDisplacesTheLowestPriorityTask) {
  Submit(3, 3, 5);
  Sync();
  // Preempting task 1 costs 115000 + 10 and saves 150000; preempting task 2
  // costs 125000 + 10. The cheapest is task 1's slot.
  auto round = Round();
  EXPECT_EQ(round.machine_of[3], 1u);
  EXPECT_EQ(round.machine_of[1], 0u);
  EXPECT_EQ(round.machine_of[2], 2u);
  // Stable afterwards: the preempted task (priority 1) cannot take a slot
  // back from priorities 2 and 5.
  round = Round();
  EXPECT_TRUE(Unchanged(round));
  EXPECT_EQ(round.machine_of[1], 0u);
}

TEST_F(PriorityPolicyTest, FreeSlotBeatsPreemption) {
  Apply(cluster::MachineAdded{MachineId(3), "r", {}, 1, {}});
  Submit(3, 3, 9);
  Sync();
  auto round = Round();
  EXPECT_EQ(round.machine_of[3], 3u);
  EXPECT_EQ(round.machine_of[1], 1u);
  EXPECT_EQ(round.machine_of[2], 2u);
}

TEST_F(PriorityPolicyTest, JobPriorityRaisesItsTasks) {
  Apply(cluster::JobSubmitted{JobId(4), "j", 7, {{.id = TaskId(4)}}});
  Sync();
  // Waiting costs 100,000 + 10,000 per level of the job's priority.
  EXPECT_EQ(policy_.WaitingCost(*state_.FindTask(TaskId(4)), state_, 1),
            170'000);
  auto round = Round();
  EXPECT_EQ(round.machine_of[4], 1u);
}

// Tasks that ask for CPU go through their shape's class, so every
// decision fits (Place refuses one that does not) and rounds stop with
// the rest waiting: two 4-core machines take two 1.5-core tasks each.
TEST(PriorityResourcesTest, TasksAskingForRoomArePlacedOnlyWhereTheyFit) {
  PriorityPolicy policy;
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  FlowNetwork network;
  NetworkBuilder builder(network);
  const auto apply = [&](cluster::EventBody body) {
    ASSERT_THAT(state.Apply(ClusterEvent{"e", 1, "t", body}, 1, changes),
                IsOk());
  };
  for (uint64_t m = 1; m <= 2; ++m) {
    apply(cluster::MachineAdded{MachineId(m), "r", {4000, 0, 0}, 4, {}});
  }
  cluster::JobSubmitted job{JobId(1), "j", 3, {}};
  for (uint64_t t = 1; t <= 6; ++t) {
    job.tasks.push_back({.id = TaskId(t), .request = {1500, 0, 0}});
  }
  apply(job);
  for (int round = 0; round < 4; ++round) {
    ASSERT_THAT(policy.Sync(changes, state, SyncContext{1}, builder), IsOk());
    changes.Clear();
    auto solved = flow::testing::SolveNetwork(network);
    ASSERT_THAT(solved.status(), IsOk());
    ASSERT_THAT(flow::testing::ApplyRound(*solved, state, 2, changes), IsOk());
  }
  for (const auto& [id, machine] : state.machines()) {
    EXPECT_EQ(machine.running.size(), 2u) << id;
    EXPECT_LE(machine.allocated.cpu_millis, 4000) << id;
  }
}

// The networks priority built on random slot-model clusters before it was
// a built-in profile (fingerprints taken at c0755d1): jobs and tasks of
// random priorities on an over-subscribed cluster, so that rounds preempt
// and migrate, priorities updated, tasks finishing and machines failing,
// with random parameters. Any change to a node, arc, capacity or cost
// changes a fingerprint.
TEST(PriorityPinTest, KeepsItsNetworkOnRandomClusters) {
  const std::vector<uint64_t> expected = {
      1512014862896409887ULL,  4004012587323116080ULL,
      15659372725092240463ULL, 10412361742874354811ULL,
      13861745975377236581ULL, 12815988468079563079ULL,
      16884117851456526572ULL, 2031711019564661263ULL,
      8954634444506669706ULL,  7080024354551830185ULL,
      2238650494237111491ULL,  5910327286189977798ULL,
      3772651397910045834ULL,  9761350120862399441ULL,
      11391660112091940405ULL, 11831094517747351690ULL,
      15124082380837244308ULL, 14747545601796117241ULL,
      6188197433889296823ULL,  12616479186580848049ULL,
      4562406249603399288ULL,  6907155070116407481ULL,
      7371673270318657349ULL,  16331767987238441005ULL};
  std::vector<uint64_t> actual;
  int moved = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    std::mt19937_64 rng(seed);
    PriorityParams params;
    params.per_task_cost = 1 + static_cast<int64_t>(rng() % 40);
    params.priority_step = 1000 + static_cast<int64_t>(rng() % 20000);
    params.preemption_penalty = 100 + static_cast<int64_t>(rng() % 9000);
    params.migration_cost = static_cast<int64_t>(rng() % 30000);
    params.max_priority = 5 + static_cast<int32_t>(rng() % 20);
    PriorityPolicy policy(params);
    flow::testing::PinnedRun run(policy, /*deferred=*/false);
    const auto apply = [&](cluster::EventBody body) {
      ASSERT_THAT(run.Apply(body), IsOk());
    };
    const auto sync = [&]() { ASSERT_THAT(run.Sync(), IsOk()); };
    const int machines = 3 + static_cast<int>(rng() % 18);
    for (int m = 1; m <= machines; ++m) {
      apply(cluster::MachineAdded{MachineId(static_cast<uint64_t>(m)),
                                  absl::StrCat("r", rng() % 3),
                                  {},
                                  static_cast<uint32_t>(1 + rng() % 8),
                                  {}});
    }
    uint64_t next_task = 1;
    for (int wave = 0; wave < 4; ++wave) {
      const int jobs = 1 + static_cast<int>(rng() % 4);
      for (int j = 0; j < jobs; ++j) {
        cluster::JobSubmitted job{
            JobId(static_cast<uint64_t>(100 * wave + j + 1)),
            "j",
            static_cast<int32_t>(rng() % 8),
            {}};
        const int n = 1 + static_cast<int>(rng() % 20);
        for (int t = 0; t < n; ++t) {
          job.tasks.push_back({.id = TaskId(next_task++),
                               .priority = static_cast<int32_t>(rng() % 30)});
        }
        apply(job);
      }
      sync();
      for (int round = 0; round < 2; ++round) {
        auto solved = run.Round();
        ASSERT_THAT(solved.status(), IsOk());
        for (const TaskPlacement& p : solved->placements) {
          if (p.running_on != 0 && p.machine_id != p.running_on) ++moved;
        }
      }
      std::vector<std::pair<JobId, TaskId>> finishing;
      std::vector<std::pair<JobId, TaskId>> updating;
      for (const auto& [id, task] : run.state().tasks()) {
        if (task.running() && rng() % 5 == 0) {
          finishing.emplace_back(task.job, id);
        } else if (rng() % 7 == 0) {
          updating.emplace_back(task.job, id);
        }
      }
      for (const auto& [job, task] : finishing) {
        apply(cluster::TaskFinished{job, task});
      }
      for (const auto& [job, task] : updating) {
        apply(cluster::TaskUpdated{
            job, task, {}, static_cast<int32_t>(rng() % 30)});
      }
      if (wave == 2) {
        apply(cluster::MachineFailed{MachineId(1), "x"});
      }
      run.now_us += 2'000'000;
      sync();
    }
    actual.push_back(run.fingerprint);
  }
  EXPECT_GT(moved, 20);  // rounds did preempt and migrate
  EXPECT_EQ(actual, expected) << "now: " << absl::StrJoin(actual, ", ");
}

}  // namespace
}  // namespace flowsched::flow
