#include "services/graph_manager/state_persister.h"

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/flow/load_spreading_policy.h"
#include "services/flow/network_builder.h"
#include "services/graph_manager/state_digest.h"
#include "services/graph_manager/state_records.h"
#include "services/graph_manager/store_test_util.h"
#include "storage/keys.h"

namespace flowsched::graph_manager {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

using StatePersisterTest = StoreTest;

TEST_F(StatePersisterTest, RestoredStateEqualsTheLiveOne) {
  std::mt19937 rng(7);
  for (uint64_t m = 1; m <= 6; ++m) {
    Apply(cluster::MachineAdded{MachineId(m), "r", {}, 2, {{"k", "v"}}});
  }
  uint64_t next_task = 1;
  for (uint64_t j = 1; j <= 5; ++j) {
    cluster::JobSubmitted job{JobId(j), "job", 1, {}};
    for (int t = 0; t < 3; ++t) {
      job.tasks.push_back({.id = TaskId(next_task++),
                           .request = {100, 200, 0},
                           .priority = 0,
                           .input = {},
                           .input_bytes = 0});
    }
    Apply(job);
  }
  Commit();
  // Place some, finish some, fail a machine: ids get freed and reused.
  for (uint64_t t = 1; t <= 10; ++t) {
    ASSERT_THAT(state_.Place(TaskId(t), MachineId((t % 6) + 1), 5, changes_),
                IsOk());
  }
  Commit();
  Apply(cluster::TaskFinished{JobId(1), TaskId(1)});
  Apply(cluster::MachineFailed{MachineId(3), "disk"});
  Commit();
  Apply(cluster::TaskSubmitted{JobId(2),
                               {.id = TaskId(99),
                                .request = {},
                                .priority = 0,
                                .input = {},
                                .input_bytes = 0}});
  Commit();

  cluster::ClusterState restored_state;
  flow::FlowNetwork restored_network;
  v1::GraphManagerMeta restored_meta;
  ASSERT_THAT(
      RestoreState(*store_, restored_state, restored_network, restored_meta),
      IsOk());
  EXPECT_EQ(restored_state.tasks().size(), state_.tasks().size());
  EXPECT_EQ(restored_state.running_task_count(), state_.running_task_count());
  EXPECT_EQ(restored_state.machines().size(), 5u);
  for (const auto& [id, task] : state_.tasks()) {
    const cluster::Task* other = restored_state.FindTask(id);
    ASSERT_NE(other, nullptr);
    EXPECT_EQ(other->machine, task.machine);
    EXPECT_EQ(other->spec, task.spec);
  }
  EXPECT_EQ(restored_state.FindMachine(MachineId(2))->labels.at("k"), "v");
  // Same nodes with the same ids, same arcs (order aside).
  EXPECT_EQ(restored_network.node_count(), network_.node_count());
  EXPECT_EQ(restored_network.arc_count(), network_.arc_count());
  network_.ForEachNode([&](flow::NodeId id, const flow::NodeData& data) {
    ASSERT_TRUE(restored_network.IsLive(id));
    EXPECT_EQ(restored_network.node(id), data);
    network_.ForEachOutArc(id, [&](const flow::ArcView& arc) {
      auto other = restored_network.FindArc(arc.src, arc.dst);
      ASSERT_TRUE(other.has_value());
      EXPECT_EQ(other->capacity, arc.capacity);
      EXPECT_EQ(other->cost, arc.cost);
    });
  });
}

TEST_F(StatePersisterTest, ConstraintsTimesAndDerivedAllocationSurvive) {
  Apply(cluster::MachineAdded{
      MachineId(1), "r", {4000, 8000, 0}, 4, {{"zone", "a"}}});
  cluster::JobSubmitted job{JobId(1),
                            "job",
                            1,
                            {},
                            /*different_machines=*/true,
                            /*min_members=*/2};
  job.tasks.push_back({.id = TaskId(1),
                       .request = {1000, 3000, 0},
                       .priority = 0,
                       .input = {},
                       .input_bytes = 0,
                       .required_labels = {{"zone", "a"}},
                       .preferred_labels = {{"ssd", "yes"}, {"gpu", ""}}});
  job.tasks.push_back({.id = TaskId(2),
                       .request = {500, 1000, 0},
                       .priority = 0,
                       .input = {},
                       .input_bytes = 0,
                       .required_labels = {},
                       .preferred_labels = {}});
  ASSERT_THAT(state_.Apply({"e", 1'000, "t", job}, 1'000, changes_), IsOk());
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 5'000, changes_), IsOk());
  ASSERT_THAT(state_.Place(TaskId(2), MachineId(1), 6'000, changes_), IsOk());
  ASSERT_THAT(state_.Preempt(TaskId(2), 9'000, changes_), IsOk());
  ASSERT_THAT(state_.Place(TaskId(2), MachineId(1), 12'000, changes_), IsOk());
  state_.AdvanceTime(20'000);
  meta_.set_policy("cpu-memory");
  meta_.set_last_time_us(state_.last_time_us());
  Commit();

  cluster::ClusterState restored;
  flow::FlowNetwork restored_network;
  v1::GraphManagerMeta restored_meta;
  ASSERT_THAT(RestoreState(*store_, restored, restored_network, restored_meta),
              IsOk());
  EXPECT_EQ(restored_meta.policy(), "cpu-memory");
  EXPECT_EQ(restored.last_time_us(), 20'000);
  EXPECT_TRUE(restored.FindJob(JobId(1))->different_machines);
  EXPECT_EQ(restored.FindJob(JobId(1))->min_members, 2u);
  for (uint64_t id : {1, 2}) {
    const cluster::Task& live = *state_.FindTask(TaskId(id));
    const cluster::Task& back = *restored.FindTask(TaskId(id));
    EXPECT_EQ(back.spec, live.spec);
    EXPECT_EQ(back.wait_us_total, live.wait_us_total);
    EXPECT_EQ(back.run_us_total, live.run_us_total);
    EXPECT_EQ(back.wait_start_us, live.wait_start_us);
    EXPECT_EQ(back.WaitMicros(30'000), live.WaitMicros(30'000));
    EXPECT_EQ(back.RunMicros(30'000), live.RunMicros(30'000));
  }
  const cluster::Task& second = *restored.FindTask(TaskId(2));
  EXPECT_EQ(second.wait_us_total, 5'000 + 3'000);  // 1000..6000, 9000..12000
  EXPECT_EQ(second.run_us_total, 3'000);           // 6000..9000
  EXPECT_EQ(restored.FindTask(TaskId(1))->spec.preferred_labels.at("ssd"),
            "yes");
  // Machine.allocated is not stored; RestoreTask rebuilds it.
  const cluster::Resources allocated =
      restored.FindMachine(MachineId(1))->allocated;
  EXPECT_EQ(allocated.cpu_millis, 1500);
  EXPECT_EQ(allocated.memory_bytes, 4000);
  EXPECT_EQ(allocated.cpu_millis,
            state_.FindMachine(MachineId(1))->allocated.cpu_millis);
  // And it is enforced after the restart: 3000 + 1000 + 5000 > 8000 bytes.
  cluster::ChangeSet changes;
  ASSERT_THAT(restored.Apply({"e", 0, "t",
                              cluster::TaskSubmitted{JobId(1),
                                                     {.id = TaskId(3),
                                                      .request = {100, 5000, 0},
                                                      .priority = 0,
                                                      .input = {},
                                                      .input_bytes = 0}}},
                             21'000, changes),
              IsOk());
  EXPECT_THAT(restored.Place(TaskId(3), MachineId(1), 22'000, changes),
              StatusIs(absl::StatusCode::kFailedPrecondition, "(memory)"));
}

// Issue #31: named scalars, devices, accelerator asks and device shares
// round-trip through the store, and device use is rebuilt exactly.
TEST_F(StatePersisterTest, ScalarsDevicesAndAssignmentsSurvive) {
  cluster::MachineAdded gpu{MachineId(1), "r", {}, 8, {}};
  gpu.capacity.scalars.Set("ephemeral-storage", 1000);
  gpu.accelerators = {{.count = 2, .model = "a10", .memory_bytes = 24},
                      {.count = 1, .model = "t4", .milli_per_device = 500}};
  Apply(gpu);
  const auto task = [](uint64_t id, cluster::AcceleratorRequest ask) {
    cluster::TaskSpec spec;
    spec.id = TaskId(id);
    spec.accelerator = std::move(ask);
    return spec;
  };
  cluster::JobSubmitted job{JobId(1), "j", 0, {}};
  job.tasks.push_back(
      task(1, {.milli = 300,
               .memory_bytes = 4,
               .models = std::vector<std::string>{"a10", "h100"},
               .preferred_models = {"h100"}}));
  job.tasks.push_back(task(2, {.milli = 600}));
  job.tasks.push_back(task(3, {.whole = 1}));
  job.tasks.push_back(task(4, {.whole = 1}));  // waits: no device is free
  job.tasks[0].request.scalars.Set("ephemeral-storage", 400);
  Apply(job);
  for (uint64_t id = 1; id <= 3; ++id) {
    ASSERT_THAT(state_.Place(TaskId(id), MachineId(1), 2, changes_), IsOk());
  }
  Commit();

  cluster::ClusterState restored;
  flow::FlowNetwork restored_network;
  v1::GraphManagerMeta restored_meta;
  ASSERT_THAT(RestoreState(*store_, restored, restored_network, restored_meta),
              IsOk());
  for (const auto& [id, live] : state_.tasks()) {
    const cluster::Task& back = *restored.FindTask(id);
    EXPECT_EQ(back.spec, live.spec) << id.value();
    EXPECT_EQ(back.devices, live.devices) << id.value();
  }
  EXPECT_FALSE(restored.FindTask(TaskId(4))->running());
  const cluster::Machine& live = *state_.FindMachine(MachineId(1));
  const cluster::Machine& back = *restored.FindMachine(MachineId(1));
  EXPECT_EQ(back.capacity, live.capacity);
  EXPECT_EQ(back.allocated, live.allocated);
  EXPECT_EQ(back.devices, live.devices);  // model, capacity and use
  EXPECT_EQ(back.devices[0].used_milli, 900);
  EXPECT_EQ(StateDigest(restored, restored_network),
            StateDigest(state_, network_));
}

TEST_F(StatePersisterTest, MismatchedDeviceListsAreDataLoss) {
  v1::TaskRecord record;
  record.set_task_id(1);
  record.set_job_id(1);
  record.add_device_indices(0);
  EXPECT_THAT(DecodeTask(record.SerializeAsString()),
              StatusIs(absl::StatusCode::kDataLoss, "device"));
}

// Values no limit allows are damage, not state: negative amounts, an
// accelerator ask beyond a device, a device of no capacity.
TEST_F(StatePersisterTest, ImpossibleStoredValuesAreDataLoss) {
  v1::TaskRecord task;
  task.set_task_id(1);
  task.set_job_id(1);
  task.mutable_spec()->mutable_request()->set_cpu_millis(-1);
  EXPECT_THAT(DecodeTask(task.SerializeAsString()),
              StatusIs(absl::StatusCode::kDataLoss, "negative"));
  task.mutable_spec()->mutable_request()->set_cpu_millis(1);
  (*task.mutable_spec()->mutable_request()->mutable_scalars())["fpga"] = -2;
  EXPECT_THAT(DecodeTask(task.SerializeAsString()),
              StatusIs(absl::StatusCode::kDataLoss, "negative"));
  task.mutable_spec()->mutable_request()->clear_scalars();
  task.mutable_spec()->mutable_accelerator()->set_count(-1);
  EXPECT_THAT(DecodeTask(task.SerializeAsString()),
              StatusIs(absl::StatusCode::kDataLoss, "accelerator"));

  v1::MachineRecord machine;
  machine.set_machine_id(1);
  machine.mutable_capacity()->set_memory_bytes(-5);
  EXPECT_THAT(DecodeMachine(machine.SerializeAsString()),
              StatusIs(absl::StatusCode::kDataLoss, "negative"));
  machine.mutable_capacity()->set_memory_bytes(5);
  machine.add_devices()->set_capacity_milli(0);
  EXPECT_THAT(DecodeMachine(machine.SerializeAsString()),
              StatusIs(absl::StatusCode::kDataLoss, "impossible device"));
}

TEST_F(StatePersisterTest, CorruptRecordIsDataLoss) {
  storage::StateBatch batch;
  batch.Put(storage::TaskKey(5), "\xff\xff not a record");
  ASSERT_THAT(store_->Commit(std::move(batch)), IsOk());
  cluster::ClusterState state;
  flow::FlowNetwork network;
  v1::GraphManagerMeta meta;
  EXPECT_THAT(RestoreState(*store_, state, network, meta),
              StatusIs(absl::StatusCode::kDataLoss, "task"));
}

TEST_F(StatePersisterTest, ArcAtUnknownNodeIsDataLoss) {
  v1::ArcRecord record;
  record.mutable_arc()->set_src(1);
  record.mutable_arc()->set_dst(2);
  storage::StateBatch batch;
  batch.Put(storage::ArcKey(1, 2), record.SerializeAsString());
  ASSERT_THAT(store_->Commit(std::move(batch)), IsOk());
  cluster::ClusterState state;
  flow::FlowNetwork network;
  v1::GraphManagerMeta meta;
  EXPECT_THAT(RestoreState(*store_, state, network, meta),
              StatusIs(absl::StatusCode::kDataLoss, "stored arc 1->2"));
}

}  // namespace
}  // namespace flowsched::graph_manager
