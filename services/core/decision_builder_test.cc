#include "services/core/decision_builder.h"

#include "gtest/gtest.h"

namespace flowsched::core {
namespace {

TEST(DecisionBuilderTest, DiffsPlacementsAgainstWhereTasksRun) {
  flow::FlowNetwork network;
  const flow::NodeId u = network.AddNode(
      {.kind = flow::NodeKind::kJobUnscheduled, .entity_id = 42});
  std::vector<flow::TaskPlacement> placements;
  // task 1 waits -> m7, task 2 stays on m7, task 3 m7 -> none, task 4 m7 -> m8
  const uint64_t running[] = {0, 7, 7, 7};
  const uint64_t target[] = {7, 7, 0, 8};
  for (uint64_t i = 0; i < 4; ++i) {
    const flow::NodeId t = network.AddNode({.kind = flow::NodeKind::kTask,
                                            .supply = 1,
                                            .entity_id = i + 1,
                                            .running_on = running[i]});
    ASSERT_TRUE(network.SetArc(t, u, 1, 5).ok());
    placements.push_back({t, i + 1, target[i], running[i]});
  }
  const std::vector<Decision> decisions = BuildDecisions(network, placements);
  ASSERT_EQ(decisions.size(), 3u);
  EXPECT_EQ(decisions[0].task, TaskId(1));
  EXPECT_EQ(decisions[0].action, Action::kPlace);
  EXPECT_EQ(decisions[0].machine, MachineId(7));
  EXPECT_EQ(decisions[0].job, JobId(42));
  EXPECT_EQ(decisions[1].action, Action::kPreempt);
  EXPECT_EQ(decisions[1].previous, MachineId(7));
  EXPECT_EQ(decisions[2].action, Action::kMigrate);
  EXPECT_EQ(decisions[2].machine, MachineId(8));
  EXPECT_EQ(decisions[2].previous, MachineId(7));
}

TEST(DecisionBuilderTest, IdempotencyKeyIsStable) {
  EXPECT_EQ(IdempotencyKey(RoundId(12), TaskId(345)), "r12/t345");
  EXPECT_EQ(IdempotencyKey(RoundId(12), TaskId(345)),
            IdempotencyKey(RoundId(12), TaskId(345)));
}

}  // namespace
}  // namespace flowsched::core
