#include "services/flow/policy_walk.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_macros.h"
#include "services/common/status_matchers.h"

namespace flowsched::flow {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

cluster::ClusterEvent WalkEvent(cluster::EventBody body) {
  return cluster::ClusterEvent{"e", 0, "test", std::move(body)};
}

class PolicyWalkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster::MachineAdded machine;
    machine.machine = MachineId(1);
    machine.rack = "r";
    machine.task_slots = 3;
    ASSERT_THAT(state_.Apply(WalkEvent(machine), 0, changes_), IsOk());
    cluster::JobSubmitted job;
    job.job = JobId(1);
    job.name = "j";
    for (uint64_t t = 1; t <= 2; ++t) {
      cluster::TaskSpec spec;
      spec.id = TaskId(t);
      job.tasks.push_back(spec);
    }
    ASSERT_THAT(state_.Apply(WalkEvent(job), 0, changes_), IsOk());
    ASSERT_THAT(state_.Place(TaskId(2), MachineId(1), 0, changes_), IsOk());
  }
  // Jobs, machines, tasks, sink: the order every policy follows.
  absl::Status Walk(std::vector<TaskEnds>* seen = nullptr) {
    FLOWSCHED_RETURN_IF_ERROR(SyncJobsToSink(changes_, state_, builder_));
    FLOWSCHED_RETURN_IF_ERROR(
        SyncAllMachinesToSink(changes_, state_, builder_));
    FLOWSCHED_RETURN_IF_ERROR(SyncChangedTasks(
        changes_, state_, builder_,
        [&](const cluster::Task&, NodeId node, const TaskEnds& ends) {
          if (seen != nullptr) seen->push_back(ends);
          return builder_.SetOutArcs(node, {{ends.job, 1, 7}});
        }));
    return DrainTasksAtSink(builder_);
  }

  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
  FlowNetwork network_;
  NetworkBuilder builder_{network_};
};

TEST_F(PolicyWalkTest, LiveEntitiesGetNodesAndTheSinkDrainsEveryTask) {
  std::vector<TaskEnds> seen;
  ASSERT_THAT(Walk(&seen), IsOk());
  const NodeId job = builder_.FindJobNode(JobId(1));
  const NodeId machine = builder_.FindMachineNode(MachineId(1));
  ASSERT_NE(job, kNoNode);
  ASSERT_NE(machine, kNoNode);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].job, job);
  EXPECT_EQ(seen[0].machine, kNoNode);  // task 1 waits
  EXPECT_EQ(seen[1].machine, machine);  // task 2 runs on machine 1
  EXPECT_EQ(network_.node(builder_.sink()).supply, -2);
  EXPECT_EQ(network_.node(builder_.FindTaskNode(TaskId(2))).running_on, 1u);
}

TEST_F(PolicyWalkTest, EntitiesGoneFromTheStateLeaveTheNetwork) {
  ASSERT_THAT(Walk(), IsOk());
  cluster::ChangeSet gone;
  ASSERT_THAT(
      state_.Apply(WalkEvent(cluster::TaskFinished{JobId(1), TaskId(1)}), 1,
                   gone),
      IsOk());
  ASSERT_THAT(
      state_.Apply(WalkEvent(cluster::MachineRemoved{MachineId(1)}), 1, gone),
      IsOk());
  changes_ = gone;
  ASSERT_THAT(Walk(), IsOk());
  EXPECT_EQ(builder_.FindTaskNode(TaskId(1)), kNoNode);
  EXPECT_EQ(builder_.FindMachineNode(MachineId(1)), kNoNode);
  EXPECT_NE(builder_.FindTaskNode(TaskId(2)), kNoNode);  // waits again
  EXPECT_EQ(network_.node(builder_.sink()).supply, -1);
}

TEST_F(PolicyWalkTest, ATaskWhoseJobHasNoNodeIsAPolicyBug) {
  const auto ignore = [](const cluster::Task&, NodeId, const TaskEnds&) {
    return absl::OkStatus();
  };
  builder_.EnsureSink();
  EXPECT_THAT(SyncChangedTasks(changes_, state_, builder_, ignore),
              StatusIs(absl::StatusCode::kInternal, "has no node for job"));
}

TEST_F(PolicyWalkTest, OnlyLiveAggregatorsStay) {
  builder_.EnsureAggregatorNode(NodeKind::kEquivalenceClass, 5);
  builder_.EnsureAggregatorNode(NodeKind::kEquivalenceClass, 6);
  RemoveAggregatorsExcept(NodeKind::kEquivalenceClass, {6}, builder_);
  EXPECT_EQ(builder_.AggregatorKeys(NodeKind::kEquivalenceClass),
            std::vector<uint64_t>{6});
}

}  // namespace
}  // namespace flowsched::flow
