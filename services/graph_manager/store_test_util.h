#pragma once

// A fixture for tests of the stored state: a RocksDB store in a fresh data
// directory (<data_dir_>/state, as the graph manager lays it out), a
// cluster state and a load-spreading network, and Commit() staging what
// changed the way the graph manager does.

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "flowsched/v1/state.pb.h"
#include "gtest/gtest.h"
#include "services/cluster/cluster_state.h"
#include "services/flow/flow_network.h"
#include "services/flow/load_spreading_policy.h"
#include "services/flow/network_builder.h"
#include "services/graph_manager/state_persister.h"
#include "storage/state_store.h"

namespace flowsched::graph_manager {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_dir_ =
        std::filesystem::temp_directory_path() /
        ("flowsched-store-test-" + std::to_string(::getpid()) + "-" +
         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(data_dir_);
    std::filesystem::create_directories(data_dir_);
    auto store = storage::StateStore::Open((data_dir_ / "state").string(), {});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    network_.set_record_changes(true);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(data_dir_);
  }
  void Apply(cluster::EventBody body) {
    ASSERT_TRUE(state_.Apply({"e", 1, "t", body}, 1, changes_).ok());
  }
  // Syncs the network and commits entities, network and meta in one batch.
  void Commit() {
    ASSERT_TRUE(policy_.Sync(changes_, state_, builder_).ok());
    storage::StateBatch batch;
    StageEntities(changes_, state_, batch);
    StageNetwork(network_.TakeChanges(), network_, batch);
    StageMeta(meta_, batch);
    ASSERT_TRUE(store_->Commit(std::move(batch)).ok());
    changes_.Clear();
  }

  std::filesystem::path data_dir_;
  std::unique_ptr<storage::StateStore> store_;
  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
  flow::FlowNetwork network_;
  flow::NetworkBuilder builder_{network_};
  flow::LoadSpreadingPolicy policy_;
  v1::GraphManagerMeta meta_;
};

}  // namespace flowsched::graph_manager
