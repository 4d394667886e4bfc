#include "services/core/policy_network.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/core/core_test_util.h"

namespace flowsched::core {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

TEST(PolicyNetworkTest, UnknownPolicyIsRefused) {
  PolicyNetwork network;
  EXPECT_THAT(network.Adopt("no-such-policy"),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_FALSE(network.has_policy());
}

TEST(PolicyNetworkTest, SyncGivesEveryTaskAUnitOfSupply) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  BuildSmallCluster(3, 2, 5, state, changes);
  PolicyNetwork network;
  ASSERT_THAT(network.Adopt("load-spreading"), IsOk());
  ASSERT_THAT(network.Sync(changes, state, 0), IsOk());
  int64_t supply = 0;
  size_t tasks = 0;
  network.network().ForEachNode([&](flow::NodeId, const flow::NodeData& node) {
    supply += node.supply;
    tasks += node.kind == flow::NodeKind::kTask;
  });
  EXPECT_EQ(tasks, 5u);
  EXPECT_EQ(supply, 0);  // the sink drains every unit
}

// Every policy pair: switching rebuilds exactly the network a fresh build
// under the new policy makes from the same state.
TEST(PolicyNetworkTest, SwitchEqualsAFreshBuild) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  BuildSmallCluster(4, 2, 6, state, changes);
  ASSERT_THAT(state.Place(TaskId(1), MachineId(2), 5, changes), IsOk());
  for (const std::string& from : flow::PolicyNames()) {
    for (const std::string& to : flow::PolicyNames()) {
      PolicyNetwork switched;
      ASSERT_THAT(switched.Adopt(from), IsOk());
      ASSERT_THAT(switched.Sync(changes, state, 10), IsOk());
      switched.network().set_record_changes(true);
      ASSERT_THAT(switched.SwitchPolicy(to, state, 10), IsOk())
          << from << " -> " << to;
      EXPECT_EQ(switched.policy().name(), to);
      EXPECT_FALSE(switched.network().TakeChanges().empty());

      PolicyNetwork fresh;
      ASSERT_THAT(fresh.Adopt(to), IsOk());
      ASSERT_THAT(fresh.Sync(EverythingIn(state), state, 10), IsOk());
      EXPECT_EQ(switched.network().SnapshotChanges(),
                fresh.network().SnapshotChanges())
          << from << " -> " << to;
    }
  }
}

TEST(PolicyNetworkTest, FailedSwitchChangesNothing) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  BuildSmallCluster(2, 1, 2, state, changes);
  PolicyNetwork network;
  ASSERT_THAT(network.Adopt("load-spreading"), IsOk());
  ASSERT_THAT(network.Sync(changes, state, 0), IsOk());
  const auto before = network.network().SnapshotChanges();
  EXPECT_THAT(network.SwitchPolicy("nope", state, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_EQ(network.policy().name(), "load-spreading");
  EXPECT_EQ(network.network().SnapshotChanges(), before);
}

TEST(PolicyNetworkTest, AdoptRestoresTheEntityMapsOfAStoredNetwork) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  BuildSmallCluster(2, 2, 3, state, changes);
  PolicyNetwork built;
  ASSERT_THAT(built.Adopt("load-spreading"), IsOk());
  ASSERT_THAT(built.Sync(changes, state, 0), IsOk());

  // As a restart does: the network from storage, then the policy.
  PolicyNetwork restored;
  for (const flow::GraphChange& change : built.network().SnapshotChanges()) {
    ASSERT_THAT(restored.network().Apply(change), IsOk());
  }
  ASSERT_THAT(restored.Adopt("load-spreading"), IsOk());
  EXPECT_NE(restored.builder().FindTaskNode(TaskId(3)), flow::kNoNode);
  // A later change is then an update in place, as in the original.
  cluster::ChangeSet placed;
  ASSERT_THAT(state.Place(TaskId(3), MachineId(1), 1, placed), IsOk());
  ASSERT_THAT(built.Sync(placed, state, 1), IsOk());
  ASSERT_THAT(restored.Sync(placed, state, 1), IsOk());
  EXPECT_EQ(restored.network().SnapshotChanges(),
            built.network().SnapshotChanges());
}

TEST(PolicyNetworkTest, RefreshOfATimeIndependentPolicyChangesNothing) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  BuildSmallCluster(2, 2, 3, state, changes);
  PolicyNetwork network;
  ASSERT_THAT(network.Adopt("load-spreading"), IsOk());
  ASSERT_THAT(network.Sync(changes, state, 0), IsOk());
  network.network().set_record_changes(true);
  ASSERT_THAT(network.Refresh(state, 1'000'000'000), IsOk());
  EXPECT_TRUE(network.network().TakeChanges().empty());
}

}  // namespace
}  // namespace flowsched::core
