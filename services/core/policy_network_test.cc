#include "services/core/policy_network.h"

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/core/core_test_util.h"
#include "services/flow/policy_test_util.h"

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

using PolicyNetworkFixtureTest = SmallClusterTest;

TEST_F(PolicyNetworkFixtureTest, SyncGivesEveryTaskAUnitOfSupply) {
  Build(3, 2, 5);
  int64_t supply = 0;
  size_t tasks = 0;
  network_.network().ForEachNode([&](flow::NodeId, const flow::NodeData& node) {
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

// A parameter reaches the costs the policy builds, and the spec the network
// keeps is the canonical one (the identity the store and the ledger use).
TEST(PolicyNetworkTest, ParametersReachTheNetwork) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  BuildSmallCluster(4, 2, 6, state, changes);
  auto build = [&](const std::string& spec) {
    PolicyNetwork network;
    EXPECT_THAT(network.Adopt(spec), IsOk()) << spec;
    EXPECT_THAT(network.Sync(changes, state, 10), IsOk()) << spec;
    return std::make_pair(network.spec(), network.network().SnapshotChanges());
  };
  const auto plain = build("load-spreading");
  const auto explicit_default = build(" load-spreading: per_task_cost=10 ");
  const auto doubled = build("load-spreading:per_task_cost=20");
  EXPECT_EQ(plain.first, "load-spreading");
  EXPECT_EQ(explicit_default, plain);
  EXPECT_EQ(doubled.first, "load-spreading:per_task_cost=20");
  EXPECT_NE(doubled.second, plain.second);
  // quincy-qfpx is quincy-qfp with xi = 20.
  EXPECT_EQ(build("quincy-qfp:xi=20").second, build("quincy-qfpx").second);
}

TEST_F(PolicyNetworkFixtureTest, FailedSwitchChangesNothing) {
  Build(2, 1, 2);
  const auto before = network_.network().SnapshotChanges();
  EXPECT_THAT(network_.SwitchPolicy("nope", state_, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_EQ(network_.policy().name(), "load-spreading");
  EXPECT_EQ(network_.network().SnapshotChanges(), before);
}

TEST_F(PolicyNetworkFixtureTest, AdoptRestoresTheEntityMapsOfAStoredNetwork) {
  Build(2, 2, 3);
  // As a restart does: the network from storage, then the policy.
  PolicyNetwork restored;
  for (const flow::GraphChange& change : network_.network().SnapshotChanges()) {
    ASSERT_THAT(restored.network().Apply(change), IsOk());
  }
  ASSERT_THAT(restored.Adopt("load-spreading"), IsOk());
  EXPECT_NE(restored.builder().FindTaskNode(TaskId(3)), flow::kNoNode);
  // A later change is then an update in place, as in the original.
  ASSERT_THAT(state_.Place(TaskId(3), MachineId(1), 1, changes_), IsOk());
  ASSERT_THAT(network_.Sync(changes_, state_, 1), IsOk());
  ASSERT_THAT(restored.Sync(changes_, state_, 1), IsOk());
  EXPECT_EQ(restored.network().SnapshotChanges(),
            network_.network().SnapshotChanges());
}

TEST_F(PolicyNetworkFixtureTest, RefreshRepricesOnlyTimeDependentPolicies) {
  Build(2, 2, 3, "load-spreading");
  network_.network().set_record_changes(true);
  ASSERT_THAT(network_.Refresh(state_, 1'000'000'000), IsOk());
  EXPECT_TRUE(network_.network().TakeChanges().empty());

  // Quincy's waiting tasks cost more the longer they wait.
  ASSERT_THAT(network_.SwitchPolicy("quincy-qfp", state_, 0), IsOk());
  network_.network().TakeChanges();
  ASSERT_THAT(network_.Refresh(state_, 1'000'000'000), IsOk());
  EXPECT_FALSE(network_.network().TakeChanges().empty());
}

// A sync that leaves work to the next Refresh (as the graph manager's, once
// per batch of events) ends, after that Refresh, in exactly the network an
// eager sync of every step makes; so does a fresh policy handed the
// deferred network before its Refresh (a restart between batch and cut).
// Random steps: tasks with and without requests arrive, start, finish;
// machines come and go.
TEST(PolicyNetworkTest, DeferredSyncThenRefreshEqualsAnEagerSync) {
  for (const std::string& policy : flow::PolicyNames()) {
    SCOPED_TRACE(policy);
    std::mt19937_64 random(7);
    cluster::ClusterState state;
    cluster::ChangeSet changes;
    BuildSmallCluster(6, 3, 4, state, changes);
    PolicyNetwork eager;
    PolicyNetwork deferred;
    ASSERT_THAT(eager.Adopt(policy), IsOk());
    ASSERT_THAT(deferred.Adopt(policy), IsOk());
    const auto event = [](cluster::EventBody body) {
      return cluster::ClusterEvent{"e", 0, "test", std::move(body)};
    };
    uint64_t next_task = 100;
    uint64_t next_machine = 7;
    bool owed_seen = false;
    for (int step = 1; step <= 60; ++step) {
      const int64_t now = int64_t{step} * 1'000'000;
      switch (random() % 4) {
        case 0: {  // a task, asking for CPU and memory or for nothing
          cluster::TaskSubmitted submitted;
          submitted.job = JobId(1);
          submitted.task.id = TaskId(next_task++);
          if (random() % 3 != 0) {
            submitted.task.request.cpu_millis = 250 * (1 + random() % 3);
            submitted.task.request.memory_bytes = int64_t{1} << 20;
          }
          ASSERT_THAT(state.Apply(event(submitted), now, changes), IsOk());
          break;
        }
        case 1: {  // a waiting task starts on a machine with a free slot
          for (const auto& [id, task] : state.tasks()) {
            if (task.running()) continue;
            for (const auto& [mid, machine] : state.machines()) {
              if (machine.running.size() < machine.task_slots &&
                  state.Place(id, mid, now, changes).ok()) {
                break;
              }
            }
            break;
          }
          break;
        }
        case 2: {  // a running task finishes
          for (const auto& [id, task] : state.tasks()) {
            if (!task.running() || random() % 2 == 0) continue;
            cluster::TaskFinished finished{task.job, id};
            ASSERT_THAT(state.Apply(event(finished), now, changes), IsOk());
            break;
          }
          break;
        }
        default: {  // a machine leaves or joins
          if (random() % 2 == 0 && state.machines().size() > 3) {
            cluster::MachineRemoved removed{state.machines().begin()->first};
            ASSERT_THAT(state.Apply(event(removed), now, changes), IsOk());
          } else {
            cluster::MachineAdded added;
            added.machine = MachineId(next_machine++);
            added.rack = "r" + std::to_string(next_machine % 2);
            added.task_slots = 3;
            added.capacity.cpu_millis = 1000;
            added.capacity.memory_bytes = int64_t{8} << 20;
            ASSERT_THAT(state.Apply(event(added), now, changes), IsOk());
          }
          break;
        }
      }
      ASSERT_THAT(eager.Sync(changes, state, now), IsOk());
      ASSERT_THAT(deferred.Sync(changes, state, now, /*refresh_follows=*/true),
                  IsOk());
      changes.Clear();
      owed_seen = owed_seen || deferred.refresh_owed();
      // A few batches before each cut; the last step ends every task (a
      // restart then finds none to re-price, only owed room to release).
      if (step == 60) {
        std::vector<std::pair<JobId, TaskId>> all;
        for (const auto& [id, task] : state.tasks())
          all.emplace_back(task.job, id);
        for (const auto& [job, id] : all) {
          ASSERT_THAT(
              state.Apply(event(cluster::TaskKilled{job, id}), now, changes),
              IsOk());
        }
        ASSERT_THAT(eager.Sync(changes, state, now), IsOk());
        ASSERT_THAT(
            deferred.Sync(changes, state, now, /*refresh_follows=*/true),
            IsOk());
        changes.Clear();
        ASSERT_TRUE(state.tasks().empty());
      } else if (random() % 3 != 0) {
        continue;
      }

      PolicyNetwork restarted;
      for (const flow::GraphChange& change :
           deferred.network().SnapshotChanges()) {
        ASSERT_THAT(restarted.network().Apply(change), IsOk());
      }
      ASSERT_THAT(restarted.Adopt(policy), IsOk());
      ASSERT_THAT(eager.Refresh(state, now), IsOk());
      ASSERT_THAT(deferred.Refresh(state, now), IsOk());
      ASSERT_THAT(restarted.Refresh(state, now), IsOk());
      EXPECT_FALSE(deferred.refresh_owed()) << "step " << step;
      const std::vector<std::string> want =
          flow::testing::Describe(eager.network());
      ASSERT_EQ(flow::testing::Describe(deferred.network()), want)
          << "step " << step;
      ASSERT_EQ(flow::testing::Describe(restarted.network()), want)
          << "step " << step;
    }
    // The room-reserving policies did defer their reservations.
    if (policy == "load-spreading" || policy == "cpu-memory" ||
        policy.starts_with("quincy")) {
      EXPECT_TRUE(owed_seen);
    }
  }
}

}  // namespace
}  // namespace flowsched::core
