#include "tools/sim/change_pipeline.h"

#include <memory>

#include "gtest/gtest.h"
#include "services/core/round_solver.h"

namespace flowsched::sim {
namespace {

flow::NodeData TaskNode(uint64_t id) {
  return {.kind = flow::NodeKind::kTask, .supply = 1, .entity_id = id};
}

std::unique_ptr<core::RoundSolver> Replica() {
  auto replica = core::RoundSolver::Create(core::kIncrementalRounds);
  EXPECT_TRUE(replica.ok()) << replica.status();
  return replica.ok() ? std::move(replica).value() : nullptr;
}

// A replica that already has node `node`: the network's AddNode of that
// id is refused there.
std::unique_ptr<core::RoundSolver> ReplicaHolding(flow::NodeId node) {
  std::unique_ptr<core::RoundSolver> replica = Replica();
  if (replica == nullptr) return nullptr;
  const absl::Status added =
      replica->Apply({.type = flow::GraphChange::Type::kAddNode,
                      .node = node,
                      .data = TaskNode(99)});
  EXPECT_TRUE(added.ok()) << added;
  return replica;
}

// Rounds of every size around the chunk (none, fewer than a chunk, several
// chunks and a rest, changes recorded before the pipeline): the replica
// ends equal to the network, change for change, and solves.
TEST(ChangePipelineTest, TheReplicaFollowsTheNetworkWhateverTheChunks) {
  flow::FlowNetwork network;
  network.set_record_changes(true);
  std::unique_ptr<core::RoundSolver> replica = Replica();
  ASSERT_NE(replica, nullptr);
  const flow::NodeId sink = network.AddNode(
      {.kind = flow::NodeKind::kSink, .supply = 0, .entity_id = 0});
  uint64_t next_task = 1;
  int64_t tasks = 0;
  for (size_t round_tasks : {0, 1, 3, 4, 5, 17, 40}) {
    ChangePipeline pipe(network, *replica, /*chunk=*/4);
    for (size_t i = 0; i < round_tasks; ++i) {
      const flow::NodeId task = network.AddNode(TaskNode(next_task++));
      ASSERT_TRUE(network.SetArc(task, sink, 1, 5).ok());
      ++tasks;
    }
    ASSERT_TRUE(network.UpdateNode(sink, -tasks, 0).ok());
    ASSERT_TRUE(pipe.Finish().ok());
    EXPECT_FALSE(network.has_changes());
    EXPECT_EQ(replica->network().SnapshotChanges(), network.SnapshotChanges())
        << round_tasks << " tasks";
  }
  // Recorded with no pipeline, handed over by the next one.
  const flow::NodeId late = network.AddNode(TaskNode(next_task++));
  ASSERT_TRUE(network.SetArc(late, sink, 1, 5).ok());
  ASSERT_TRUE(network.UpdateNode(sink, -(tasks + 1), 0).ok());
  ChangePipeline pipe(network, *replica, 4);
  ASSERT_TRUE(pipe.Finish().ok());
  EXPECT_EQ(replica->network().SnapshotChanges(), network.SnapshotChanges());
  const core::SolvedRound solved = replica->Solve(false);
  ASSERT_TRUE(solved.verdict.ok()) << solved.verdict;
  EXPECT_EQ(solved.tasks, static_cast<size_t>(tasks + 1));
}

// A change the replica refuses is reported once the round finishes, and
// nothing after it is applied; whether it came inline or on the thread.
TEST(ChangePipelineTest, TheFirstRefusedChangeIsReported) {
  for (size_t chunk : {1, 1000}) {
    flow::FlowNetwork network;
    network.set_record_changes(true);
    std::unique_ptr<core::RoundSolver> replica = ReplicaHolding(0);
    ASSERT_NE(replica, nullptr);
    ChangePipeline pipe(network, *replica, chunk);
    network.AddNode(TaskNode(1));
    network.AddNode(TaskNode(2));
    const absl::Status status = pipe.Finish();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition)
        << "chunk " << chunk << ": " << status;
    EXPECT_FALSE(replica->network().IsLive(1)) << "chunk " << chunk;
  }
}

// A refusal in a later chunk, after earlier chunks went through on the
// thread: reported, and the chunks after it are not applied.
TEST(ChangePipelineTest, ARefusalAfterAppliedChunksStopsTheRest) {
  flow::FlowNetwork network;
  network.set_record_changes(true);
  // The network's 21st AddNode collides.
  std::unique_ptr<core::RoundSolver> replica = ReplicaHolding(20);
  ASSERT_NE(replica, nullptr);
  ChangePipeline pipe(network, *replica, /*chunk=*/4);
  for (uint64_t id = 1; id <= 40; ++id) network.AddNode(TaskNode(id));
  EXPECT_EQ(pipe.Finish().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(replica->network().IsLive(19));   // in an earlier chunk
  EXPECT_FALSE(replica->network().IsLive(21));  // after the refusal
  EXPECT_FALSE(replica->network().IsLive(39));
}

// A round given up before Finish: the pipeline stops its thread and lets
// go of the network, which records on as before.
TEST(ChangePipelineTest, WithoutFinishTheThreadStopsAndTheSinkGoes) {
  flow::FlowNetwork network;
  network.set_record_changes(true);
  std::unique_ptr<core::RoundSolver> replica = Replica();
  ASSERT_NE(replica, nullptr);
  {
    ChangePipeline pipe(network, *replica, /*chunk=*/4);
    for (uint64_t id = 1; id <= 10; ++id) network.AddNode(TaskNode(id));
  }
  network.AddNode(TaskNode(11));
  network.AddNode(TaskNode(12));
  // Kept in the log (no sink), not handed to anyone.
  EXPECT_EQ(network.TakeChanges().size(), 4u);  // 9, 10, 11, 12
  EXPECT_FALSE(replica->network().IsLive(10));
}

}  // namespace
}  // namespace flowsched::sim
