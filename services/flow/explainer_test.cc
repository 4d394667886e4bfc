#include "services/flow/explainer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/flow/cpu_memory_policy.h"
#include "services/flow/load_spreading_policy.h"
#include "services/flow/policy_test_util.h"

namespace flowsched::flow {
namespace {

using cluster::ClusterEvent;
using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

class ExplainerTest : public ::testing::Test {
 protected:
  void Apply(cluster::EventBody body) {
    ASSERT_THAT(state_.Apply(ClusterEvent{"e", 1, "t", body}, 1, changes_),
                IsOk());
  }
  void Sync(SchedulingPolicy& policy) {
    ASSERT_THAT(policy.Sync(changes_, state_, SyncContext{1}, builder_),
                IsOk());
    changes_.Clear();
  }
  TaskExplanation Explain(uint64_t task) {
    auto round = flow::testing::SolveNetwork(network_);
    EXPECT_THAT(round, IsOk());
    if (!round.ok()) return {};
    auto explanation =
        ExplainTask(network_, round->flow_by_slot, TaskId(task), builder_);
    EXPECT_THAT(explanation, IsOk());
    return explanation.ok() ? *explanation : TaskExplanation{};
  }

  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
  FlowNetwork network_;
  NetworkBuilder builder_{network_};
};

// Load spreading, two one-slot machines, m1 already busy: three tasks. The
// first new task goes to m2 (X -> m2 costs 0), the second... there is no
// slot left for the third.
TEST_F(ExplainerTest, PlacedTaskShowsItsPathAndAlternatives) {
  LoadSpreadingPolicy policy;
  Apply(cluster::MachineAdded{MachineId(1), "r", {}, 2, {}});
  Apply(cluster::MachineAdded{MachineId(2), "r", {}, 2, {}});
  Apply(cluster::JobSubmitted{JobId(1), "j", 0, {{.id = TaskId(1)}}});
  Sync(policy);
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 1, changes_), IsOk());
  Apply(cluster::TaskSubmitted{JobId(1), {.id = TaskId(2)}});
  Sync(policy);
  const TaskExplanation e = Explain(2);
  EXPECT_EQ(e.machine_id, 2u);
  ASSERT_EQ(e.path.size(), 2u);  // task -> X -> m2
  EXPECT_EQ(e.path[0].dst_kind, NodeKind::kClusterAggregator);
  EXPECT_EQ(e.path[1].dst_entity, 2u);
  EXPECT_EQ(e.path_cost, 0);
  EXPECT_EQ(e.unscheduled_cost, 100'000);
  // m1 was the alternative: one running task, so 10 for the next unit.
  ASSERT_EQ(e.alternatives.size(), 1u);
  EXPECT_EQ(e.alternatives[0].machine_id, 1u);
  EXPECT_EQ(e.alternatives[0].path_cost, 10);
  EXPECT_TRUE(e.alternatives[0].has_room);
  EXPECT_THAT(e.reason, ::testing::HasSubstr("placed on machine 2"));
  // The running task keeps its machine.
  EXPECT_THAT(Explain(1).reason, ::testing::HasSubstr("keeps running"));
}

TEST_F(ExplainerTest, WaitingBecauseEveryPathIsSaturated) {
  LoadSpreadingPolicy policy;
  Apply(cluster::MachineAdded{MachineId(1), "r", {}, 1, {}});
  Apply(cluster::JobSubmitted{
      JobId(1), "j", 0, {{.id = TaskId(1)}, {.id = TaskId(2)}}});
  Sync(policy);
  const TaskExplanation a = Explain(1);
  const TaskExplanation b = Explain(2);
  const TaskExplanation& waiting = a.machine_id == 0 ? a : b;
  EXPECT_EQ(a.machine_id + b.machine_id, 1u);
  EXPECT_THAT(waiting.reason, ::testing::HasSubstr("saturated"));
  ASSERT_EQ(waiting.path.size(), 2u);  // task -> U_1 -> sink
  EXPECT_EQ(waiting.path[0].dst_kind, NodeKind::kJobUnscheduled);
  EXPECT_EQ(waiting.path_cost, 100'000);
  ASSERT_EQ(waiting.alternatives.size(), 1u);
  EXPECT_FALSE(waiting.alternatives[0].has_room);
}

TEST_F(ExplainerTest, WaitingBecauseWaitingIsCheaper) {
  LoadSpreadingPolicy policy(
      {.per_task_cost = 10, .unscheduled_cost = 5, .preemption_cost = 200'000});
  Apply(cluster::MachineAdded{MachineId(1), "r", {}, 2, {}});
  Apply(cluster::JobSubmitted{JobId(1), "j", 0, {{.id = TaskId(1)}}});
  Sync(policy);
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 1, changes_), IsOk());
  Apply(cluster::TaskSubmitted{JobId(1), {.id = TaskId(2)}});
  Sync(policy);
  const TaskExplanation e = Explain(2);
  EXPECT_EQ(e.machine_id, 0u);
  EXPECT_THAT(e.reason, ::testing::HasSubstr("costs 10, not less than "
                                             "waiting (5)"));
}

TEST_F(ExplainerTest, WaitingBecauseNothingFits) {
  CpuMemoryPolicy policy;
  Apply(cluster::MachineAdded{MachineId(1), "r", {4000, 1 << 30, 0}, 4, {}});
  Apply(cluster::JobSubmitted{
      JobId(1), "j", 0, {{.id = TaskId(1), .request = {8000, 1, 0}}}});
  Sync(policy);
  EXPECT_THAT(Explain(1).reason, ::testing::HasSubstr("no machine"));
  auto round = flow::testing::SolveNetwork(network_);
  ASSERT_THAT(round, IsOk());
  EXPECT_THAT(ExplainTask(network_, round->flow_by_slot, TaskId(9), builder_),
              StatusIs(absl::StatusCode::kNotFound, "task 9"));
}

}  // namespace
}  // namespace flowsched::flow
