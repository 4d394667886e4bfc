#include "services/flow/priority_policy.h"

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
  EXPECT_EQ(policy_.EffectivePriority(*state_.FindTask(TaskId(4)), state_), 7);
  auto round = Round();
  EXPECT_EQ(round.machine_of[4], 1u);
}

}  // namespace
}  // namespace flowsched::flow
