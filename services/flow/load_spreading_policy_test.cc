#include "services/flow/load_spreading_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"

namespace flowsched::flow {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;
using cluster::ClusterEvent;

ClusterEvent Ev(cluster::EventBody body) { return {"e", 1, "t", body}; }

class LoadSpreadingPolicyTest : public ::testing::Test {
 protected:
  void Apply(cluster::EventBody body) {
    ASSERT_THAT(state_.Apply(Ev(body), 1, changes_), IsOk());
  }
  void Sync() {
    ASSERT_THAT(policy_.Sync(changes_, state_, builder_), IsOk());
    changes_.Clear();
  }
  int64_t ArcCost(NodeId src, NodeId dst) {
    auto arc = network_.FindArc(src, dst);
    EXPECT_TRUE(arc.has_value()) << src << "->" << dst;
    return arc ? arc->cost : -1;
  }

  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
  FlowNetwork network_;
  NetworkBuilder builder_{network_};
  LoadSpreadingPolicy policy_;
};

TEST_F(LoadSpreadingPolicyTest, BuildsFirmamentFigure6aShape) {
  Apply(cluster::MachineAdded{MachineId(1), "r", {}, 2, {}});
  Apply(cluster::MachineAdded{MachineId(2), "r", {}, 3, {}});
  cluster::JobSubmitted job{JobId(7), "j", 0, {}};
  job.tasks.resize(2);
  job.tasks[0].id = TaskId(71);
  job.tasks[1].id = TaskId(72);
  Apply(job);
  Sync();

  const NodeId sink = builder_.sink();
  const NodeId x = builder_.cluster_aggregator();
  const NodeId m1 = builder_.FindMachineNode(MachineId(1));
  const NodeId u7 = builder_.FindJobNode(JobId(7));
  const NodeId t71 = builder_.FindTaskNode(TaskId(71));
  // nodes: sink, X, 2 machines, U_7, 2 tasks
  EXPECT_EQ(network_.node_count(), 7u);
  EXPECT_EQ(network_.node(sink).supply, -2);
  EXPECT_EQ(network_.node(t71).supply, 1);
  EXPECT_EQ(ArcCost(t71, x), 0);
  EXPECT_EQ(ArcCost(t71, u7), 100'000);
  EXPECT_EQ(ArcCost(x, m1), 0);
  EXPECT_EQ(network_.FindArc(x, m1)->capacity, 2);
  EXPECT_EQ(network_.FindArc(m1, sink)->capacity, 2);
  EXPECT_EQ(network_.FindArc(u7, sink)->capacity, 2);
  EXPECT_EQ(network_.total_supply(), 0);
}

TEST_F(LoadSpreadingPolicyTest, RunningTasksRaiseTheMachineCost) {
  Apply(cluster::MachineAdded{MachineId(1), "r", {}, 4, {}});
  cluster::JobSubmitted job{JobId(7), "j", 0, {}};
  job.tasks.resize(2);
  job.tasks[0].id = TaskId(71);
  job.tasks[1].id = TaskId(72);
  Apply(job);
  Sync();
  ASSERT_THAT(state_.Place(TaskId(71), MachineId(1), 5, changes_), IsOk());
  Sync();
  const NodeId x = builder_.cluster_aggregator();
  const NodeId m1 = builder_.FindMachineNode(MachineId(1));
  const NodeId t71 = builder_.FindTaskNode(TaskId(71));
  const NodeId u7 = builder_.FindJobNode(JobId(7));
  EXPECT_EQ(ArcCost(x, m1), 10);  // one running task
  // The running task keeps its machine at no cost and may only leave it by
  // preemption, which costs more than waiting.
  EXPECT_EQ(ArcCost(t71, m1), 0);
  EXPECT_EQ(ArcCost(t71, u7), 200'000);
  EXPECT_FALSE(network_.FindArc(t71, x).has_value());
  EXPECT_EQ(network_.node(t71).running_on, 1u);
}

TEST_F(LoadSpreadingPolicyTest, RemovalsShrinkTheNetwork) {
  Apply(cluster::MachineAdded{MachineId(1), "r", {}, 4, {}});
  cluster::JobSubmitted job{JobId(7), "j", 0, {}};
  job.tasks.resize(1);
  job.tasks[0].id = TaskId(71);
  Apply(job);
  Sync();
  ASSERT_THAT(state_.Place(TaskId(71), MachineId(1), 5, changes_), IsOk());
  Sync();
  Apply(cluster::MachineFailed{MachineId(1), "x"});
  Sync();
  const NodeId t71 = builder_.FindTaskNode(TaskId(71));
  EXPECT_TRUE(network_.FindArc(t71, builder_.cluster_aggregator()));
  EXPECT_EQ(builder_.FindMachineNode(MachineId(1)), kNoNode);
  Apply(cluster::TaskFinished{JobId(7), TaskId(71)});
  Sync();
  // Only the sink and X remain.
  EXPECT_EQ(network_.node_count(), 2u);
  EXPECT_EQ(network_.arc_count(), 0u);
  EXPECT_EQ(network_.node(builder_.sink()).supply, 0);
}

TEST(PolicyRegistryTest, UnknownPolicyListsKnownOnes) {
  EXPECT_THAT(MakePolicy("quincy-xl"),
              StatusIs(absl::StatusCode::kInvalidArgument, "load-spreading"));
  auto policy = MakePolicy("load-spreading");
  ASSERT_THAT(policy, IsOk());
  EXPECT_EQ((*policy)->name(), "load-spreading");
}

TEST(NetworkBuilderTest, RestoreFromNetworkRecoversEntityMaps) {
  FlowNetwork network;
  NetworkBuilder builder(network);
  builder.EnsureSink();
  NodeId m = builder.EnsureMachineNode(MachineId(4));
  NodeId t = builder.EnsureTaskNode(TaskId(9), 1, MachineId(4));
  NetworkBuilder restored(network);
  ASSERT_THAT(restored.RestoreFromNetwork(), IsOk());
  EXPECT_EQ(restored.FindMachineNode(MachineId(4)), m);
  EXPECT_EQ(restored.FindTaskNode(TaskId(9)), t);
  EXPECT_EQ(restored.sink(), builder.sink());
  // A second sink is corrupt state.
  network.AddNode({.kind = NodeKind::kSink});
  EXPECT_THAT(restored.RestoreFromNetwork(),
              StatusIs(absl::StatusCode::kDataLoss, "second node"));
}

}  // namespace
}  // namespace flowsched::flow
