#include "services/flow/network_aware_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/byte_units.h"
#include "services/common/status_matchers.h"
#include "services/flow/policy_test_util.h"

namespace flowsched::flow {
namespace {

using cluster::ClusterEvent;
using ::flowsched::testing::IsOk;

// Figure 6c's setting: 10G links (1250 MiB/s); m1 already uses 600 MiB/s,
// m2 100 MiB/s. Tasks 1 and 2 request 650 MiB/s, task 3 100 MiB/s.
class NetworkAwarePolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (uint64_t m = 1; m <= 2; ++m) {
      Apply(
          cluster::MachineAdded{MachineId(m), "r", {0, 0, 1250 * kMiB}, 4, {}});
    }
    Apply(cluster::MachineUsage{MachineId(1), {0, 0, 600 * kMiB}});
    Apply(cluster::MachineUsage{MachineId(2), {0, 0, 100 * kMiB}});
    cluster::JobSubmitted job{JobId(1), "j", 0, {}};
    for (uint64_t t = 1; t <= 3; ++t) {
      job.tasks.push_back(
          {.id = TaskId(t), .request = {0, 0, (t == 3 ? 100 : 650) * kMiB}});
    }
    Apply(job);
    Sync();
  }
  void Apply(cluster::EventBody body) {
    ASSERT_THAT(state_.Apply(ClusterEvent{"e", 1, "t", body}, 1, changes_),
                IsOk());
  }
  void Sync() {
    ASSERT_THAT(policy_.Sync(changes_, state_, SyncContext{1}, builder_),
                IsOk());
    changes_.Clear();
    ASSERT_EQ(network_.total_supply(), 0);
  }
  NodeId Ra(int64_t mib) {
    return builder_.FindAggregatorNode(
        NodeKind::kEquivalenceClass,
        NetworkAwarePolicy::AggregatorKey(mib * kMiB));
  }
  NodeId M(uint64_t id) { return builder_.FindMachineNode(MachineId(id)); }
  flow::testing::SolvedRound Round() {
    auto round = flow::testing::SolveNetwork(network_);
    EXPECT_THAT(round, IsOk());
    if (!round.ok()) return {};
    EXPECT_THAT(flow::testing::ApplyRound(*round, state_, 2, changes_), IsOk());
    Sync();
    return *round;
  }

  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
  FlowNetwork network_;
  NetworkBuilder builder_{network_};
  NetworkAwarePolicy policy_;
};

// Reservation (RAs in request order, rotated per machine): m1 serves RA100
// first (650 spare -> 1 task, 550 left, not enough for 650); m2 serves
// RA650 first (1150 spare -> 1 task, 500 left) and then RA100 (1 task).
// Costs are load + request: RA100->m1 700, RA100->m2 200, RA650->m2 750.
TEST_F(NetworkAwarePolicyTest, ArcsOnlyWhereTheRequestFitsCostRequestPlusUse) {
  ASSERT_NE(Ra(650), Ra(100));
  EXPECT_EQ(builder_.FindTaskNode(TaskId(1)) != kNoNode, true);
  EXPECT_TRUE(network_.FindArc(builder_.FindTaskNode(TaskId(2)), Ra(650)));
  EXPECT_EQ(network_.FindArc(Ra(100), M(1))->cost, 700);
  EXPECT_EQ(network_.FindArc(Ra(100), M(2))->cost, 200);
  EXPECT_EQ(network_.FindArc(Ra(650), M(2))->cost, 750);
  EXPECT_EQ(network_.FindArc(Ra(650), M(2))->capacity, 1);
  EXPECT_FALSE(network_.FindArc(Ra(650), M(1)).has_value());

  auto round = Round();
  EXPECT_EQ(round.machine_of[3], 2u);
  EXPECT_EQ(round.machine_of[1] + round.machine_of[2], 2u);  // one on m2
  // Next round: m2's load is max(100 reported, 750 placed) = 750, spare
  // 500; m1 has 650 spare: the last 650 request goes to m1 at 600 + 650.
  EXPECT_EQ(network_.FindArc(Ra(650), M(1))->cost, 1250);
  EXPECT_FALSE(network_.FindArc(Ra(650), M(2)).has_value());
  round = Round();
  EXPECT_NE(round.machine_of[1], 0u);
  EXPECT_NE(round.machine_of[2], 0u);
  for (const auto& [id, machine] : state_.machines()) {
    EXPECT_LE(machine.allocated.network_bytes_per_sec, 1250 * kMiB);
  }
  // Request aggregators go once nothing waits.
  EXPECT_TRUE(builder_.AggregatorKeys(NodeKind::kEquivalenceClass).empty());
}

TEST_F(NetworkAwarePolicyTest, ObservedUseAdaptsTheArcs) {
  Apply(cluster::MachineUsage{MachineId(2), {0, 0, 1200 * kMiB}});
  Sync();
  // m2 has 50 MiB/s spare: no request fits; m1 now serves both RAs.
  EXPECT_FALSE(network_.FindArc(Ra(100), M(2)).has_value());
  EXPECT_FALSE(network_.FindArc(Ra(650), M(2)).has_value());
  auto round = Round();
  EXPECT_EQ(round.machine_of[3], 1u);
  // 650 - 100 = 550 left on m1 after task 3's reservation: 650s wait.
  EXPECT_EQ(round.machine_of[1], 0u);
  EXPECT_EQ(round.machine_of[2], 0u);
}

}  // namespace
}  // namespace flowsched::flow
