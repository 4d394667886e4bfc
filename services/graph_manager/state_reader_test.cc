#include "services/graph_manager/state_reader.h"

#include <unistd.h>

#include <filesystem>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/flow/load_spreading_policy.h"
#include "services/flow/network_builder.h"
#include "services/graph_manager/state_digest.h"
#include "services/graph_manager/state_persister.h"
#include "services/graph_manager/store_test_util.h"
#include "storage/keys.h"

namespace flowsched::graph_manager {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

// A graph manager's data directory written with the persister, read back
// through the reader while the writer still holds the store open.
class StateReaderTest : public StoreTest {
 protected:
  // Commits and flushes, so the reader sees the data in SST files too.
  void CommitAndFlush() {
    Commit();
    ASSERT_TRUE(store_->Flush().ok());
  }
  void Populate() {
    for (uint64_t m = 3; m >= 1; --m) {
      Apply(cluster::MachineAdded{MachineId(m), "r", {}, 2, {}});
    }
    cluster::JobSubmitted job{JobId(1), "job", 1, {}};
    for (uint64_t t = 4; t >= 1; --t) {
      job.tasks.push_back({.id = TaskId(t),
                           .request = {100, 200, 0},
                           .priority = 0,
                           .input = {},
                           .input_bytes = 0});
    }
    Apply(job);
    meta_.set_policy("load-spreading");
    meta_.set_epoch(5);
    CommitAndFlush();
    ASSERT_THAT(state_.Place(TaskId(2), MachineId(3), 5, changes_), IsOk());
    CommitAndFlush();
  }
};

TEST_F(StateReaderTest, LoadsWhatAGraphManagerStored) {
  Populate();
  auto reader = StateReader::Open(data_dir_.string());
  ASSERT_THAT(reader, IsOk());
  auto stored = (*reader)->Load();
  ASSERT_THAT(stored, IsOk());
  EXPECT_EQ(stored->meta.epoch(), 5u);
  EXPECT_EQ(stored->meta.policy(), "load-spreading");
  EXPECT_EQ(stored->state.tasks().size(), 4u);
  EXPECT_EQ(stored->network.node_count(), network_.node_count());
  EXPECT_EQ(StateDigest(stored->state, stored->network),
            StateDigest(state_, network_));
  auto digest = (*reader)->Digest();
  ASSERT_THAT(digest, IsOk());
  EXPECT_EQ(*digest, StateDigest(state_, network_));
}

TEST_F(StateReaderTest, VisitsTasksAndMachinesInIdOrder) {
  Populate();
  auto reader = StateReader::Open(data_dir_.string());
  ASSERT_THAT(reader, IsOk());
  std::vector<uint64_t> tasks;
  std::vector<uint64_t> machines_of_tasks;
  ASSERT_THAT((*reader)->ForEachTask([&](const cluster::Task& task) {
    tasks.push_back(task.spec.id.value());
    machines_of_tasks.push_back(task.machine.value());
    return absl::OkStatus();
  }),
              IsOk());
  EXPECT_THAT(tasks, ::testing::ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(machines_of_tasks, ::testing::ElementsAre(0, 3, 0, 0));
  std::vector<uint64_t> machines;
  ASSERT_THAT((*reader)->ForEachMachine([&](const cluster::Machine& machine) {
    machines.push_back(machine.id.value());
    return absl::OkStatus();
  }),
              IsOk());
  EXPECT_THAT(machines, ::testing::ElementsAre(1, 2, 3));
  // The visitor's error stops the walk and comes back.
  int visited = 0;
  EXPECT_THAT((*reader)->ForEachTask([&](const cluster::Task&) {
    ++visited;
    return absl::CancelledError("enough");
  }),
              StatusIs(absl::StatusCode::kCancelled, "enough"));
  EXPECT_EQ(visited, 1);
}

TEST_F(StateReaderTest, WithoutAStoreOpenFailsWithNotFound) {
  EXPECT_THAT(StateReader::Open((data_dir_ / "elsewhere").string()),
              StatusIs(absl::StatusCode::kNotFound, ""));
}

TEST_F(StateReaderTest, AnUndecodableRecordIsDataLoss) {
  Populate();
  storage::StateBatch batch;
  batch.Put(storage::TaskKey(9), "not a task record");
  ASSERT_THAT(store_->Commit(std::move(batch)), IsOk());
  ASSERT_THAT(store_->Flush(), IsOk());
  auto reader = StateReader::Open(data_dir_.string());
  ASSERT_THAT(reader, IsOk());
  EXPECT_THAT((*reader)->Load(), StatusIs(absl::StatusCode::kDataLoss, ""));
  EXPECT_THAT((*reader)->ForEachTask(
                  [](const cluster::Task&) { return absl::OkStatus(); }),
              StatusIs(absl::StatusCode::kDataLoss, ""));
}

}  // namespace
}  // namespace flowsched::graph_manager
