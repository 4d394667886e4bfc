#include "services/flow/load_spreading_policy.h"

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/flow/placement_extractor.h"
#include "services/solver/flow_checker.h"
#include "services/solver/successive_shortest_path.h"

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
    ASSERT_THAT(policy_.Sync(changes_, state_, SyncContext{5}, builder_),
                IsOk());
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
  // Convex X->M1: the first new task costs 0, the second 10.
  EXPECT_EQ(ArcCost(x, m1), 0);
  EXPECT_EQ(network_.FindArc(x, m1)->capacity, 1);
  ASSERT_EQ(network_.FindArc(x, m1)->extra_segments.size(), 1u);
  EXPECT_EQ(network_.FindArc(x, m1)->extra_segments[0],
            (ArcSegment{1, 10}));
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
  // Three free slots: pieces cost 10, 20, 30.
  EXPECT_EQ(network_.FindArc(x, m1)->extra_segments.size(), 2u);
  EXPECT_EQ(network_.FindArc(x, m1)->extra_segments[1],
            (ArcSegment{1, 30}));
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

// Worked by hand: 3 machines of 4 slots, one running task on m1, and a
// burst of 5 new tasks. Marginal costs are m1: 10, 20, 30; m2 and m3: 0,
// 10, 20. The cheapest 5 units are 0, 0, 10, 10, 10 (total 30): two new
// tasks on m2, two on m3 and one on m1, i.e. 2 tasks on every machine.
TEST_F(LoadSpreadingPolicyTest, OneRoundSpreadsABurstEvenly) {
  for (uint64_t m = 1; m <= 3; ++m) {
    Apply(cluster::MachineAdded{MachineId(m), "r", {}, 4, {}});
  }
  cluster::JobSubmitted job{JobId(1), "j", 0, {}};
  for (uint64_t t = 1; t <= 6; ++t) job.tasks.push_back({.id = TaskId(t)});
  Apply(job);
  Sync();
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 1, changes_), IsOk());
  Sync();

  solver::McmfProblem problem;
  std::vector<ArcSlot> slots;
  network_.ExportProblem(problem, slots);
  solver::SuccessiveShortestPath ssp;
  auto solution = ssp.Solve(problem);
  ASSERT_THAT(solution, IsOk());
  ASSERT_THAT(solver::CheckOptimalFlow(problem, *solution), IsOk());
  EXPECT_EQ(solution->total_cost, 30);
  std::vector<int64_t> flow(network_.arc_slot_count(), 0);
  for (size_t i = 0; i < slots.size(); ++i) flow[slots[i]] += solution->flow[i];
  auto placements = ExtractPlacements(network_, flow);
  ASSERT_THAT(placements, IsOk());
  std::map<uint64_t, int> per_machine;
  for (const TaskPlacement& p : *placements) {
    ASSERT_NE(p.machine_id, 0u) << "task " << p.task_id << " left waiting";
    ++per_machine[p.machine_id];
  }
  EXPECT_EQ(per_machine, (std::map<uint64_t, int>{{1, 2}, {2, 2}, {3, 2}}));
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
