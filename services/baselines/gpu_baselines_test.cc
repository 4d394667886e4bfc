// The FGD paper's GPU baselines on hand-worked states.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/baselines/baseline_scheduler.h"
#include "services/cluster/resource_fit.h"
#include "services/common/byte_units.h"
#include "services/common/status_matchers.h"

namespace flowsched::baselines {
namespace {

using ::flowsched::testing::IsOk;
using ::testing::ElementsAre;

using cluster::DeviceShare;
using cluster::TaskSpec;

// Machines of 32 cores, 128 GiB and `devices` devices of model "G".
class GpuState {
 public:
  GpuState& Machine(uint64_t id, uint32_t devices) {
    EXPECT_THAT(
        Apply(cluster::MachineAdded{
            .machine = MachineId(id),
            .rack = "r",
            .capacity = {.cpu_millis = 32'000, .memory_bytes = 128 * kGiB},
            .task_slots = 100,
            .accelerators = {{.count = devices, .model = "G"}}}),
        IsOk());
    return *this;
  }
  // A waiting task asking `milli` of one device (1000: a whole device).
  GpuState& Task(uint64_t id, int64_t milli, uint32_t whole = 0) {
    TaskSpec spec;
    spec.id = TaskId(id);
    spec.request = {.cpu_millis = 1000, .memory_bytes = kGiB};
    spec.accelerator.milli = milli;
    spec.accelerator.whole = whole;
    EXPECT_THAT(Apply(cluster::JobSubmitted{.job = JobId(id), .tasks = {spec}}),
                IsOk());
    return *this;
  }
  // Runs a task on the devices given.
  GpuState& Run(uint64_t task, uint64_t machine,
                std::vector<DeviceShare> devices) {
    EXPECT_THAT(
        state_.Place(TaskId(task), MachineId(machine), 0, changes_, devices),
        IsOk());
    return *this;
  }
  cluster::ClusterState& state() { return state_; }

 private:
  absl::Status Apply(cluster::EventBody body) {
    return state_.Apply({"e", 0, "test", std::move(body)}, 0, changes_);
  }
  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
};

std::vector<BaselinePlacement> Schedule(std::string_view name,
                                        const cluster::ClusterState& state,
                                        BaselineOptions options = {}) {
  auto scheduler = MakeBaseline(name, options);
  EXPECT_THAT(scheduler, IsOk());
  return (*scheduler)->Schedule(state);
}

BaselineOptions Workload(int64_t milli) {
  cluster::TaskShape shape{.cpu_millis = 1000, .memory_bytes = kGiB};
  shape.accelerator.milli = milli;
  shape.popularity = 1.0;
  return {.target_workload = cluster::TargetWorkload::FromShapes({shape})};
}

BaselinePlacement P(uint64_t task, uint64_t machine,
                    std::vector<DeviceShare> devices) {
  return {TaskId(task), MachineId(machine), std::move(devices)};
}

// Machine 1: one device, 400 milli used (600 free). Machine 2: two
// devices, device 0 with 600 used (400 free). A 400-milli task.
GpuState HoleOnMachineTwo() {
  GpuState gpu;
  gpu.Machine(1, 1).Machine(2, 2).Task(1, 400).Task(2, 600).Task(3, 400);
  gpu.Run(1, 1, {{0, 400}}).Run(2, 2, {{0, 600}});
  return gpu;
}

TEST(GpuBaselinesTest, FgdFillsTheHoleBestFitDoesNot) {
  GpuState gpu = HoleOnMachineTwo();
  // Against 500-milli tasks: machine 1 goes from 0 to 200 stranded (+200);
  // machine 2's device 0 from 400 stranded to 0 (-400).
  EXPECT_THAT(Schedule("fgd", gpu.state(), Workload(500)),
              ElementsAre(P(3, 2, {{0, 400}})));
  // Best fit: the least leftover (machine 1: 200 milli, machine 2: 1,000).
  EXPECT_THAT(Schedule("best-fit", gpu.state()),
              ElementsAre(P(3, 1, {{0, 400}})));
  // Tetris: the largest free vector along the request: machine 2.
  EXPECT_THAT(Schedule("dot-product", gpu.state()),
              ElementsAre(P(3, 2, {{0, 400}})));
}

TEST(GpuBaselinesTest, FgdChoosesTheDeviceFitTaskWouldNot) {
  GpuState gpu;
  gpu.Machine(1, 2).Task(1, 300).Task(2, 400).Task(3, 400);
  gpu.Run(1, 1, {{0, 300}}).Run(2, 1, {{1, 400}});
  // Free 700 and 600. FitTask's best fit: device 1 (600), leaving 700 and
  // 200: 200 stranded for 300-milli tasks. Device 0 leaves 300 and 600:
  // nothing stranded.
  EXPECT_THAT(cluster::FitTask(*gpu.state().FindMachine(MachineId(1)),
                               gpu.state().FindTask(TaskId(3))->spec)
                  .devices,
              ElementsAre(DeviceShare{1, 400}));
  const auto placements = Schedule("fgd", gpu.state(), Workload(300));
  EXPECT_THAT(placements, ElementsAre(P(3, 1, {{0, 400}})));
  // The state books the device FGD chose.
  cluster::ChangeSet changes;
  ASSERT_THAT(gpu.state().Place(TaskId(3), MachineId(1), 0, changes,
                                placements[0].devices),
              IsOk());
  EXPECT_THAT(gpu.state().FindTask(TaskId(3))->devices,
              ElementsAre(DeviceShare{0, 400}));
}

TEST(GpuBaselinesTest, FgdSigmoidTiesNearEqualDeltasToTheLowestMachine) {
  GpuState gpu;
  gpu.Machine(1, 1).Machine(2, 1).Task(1, 100).Task(2, 300);
  gpu.Run(1, 2, {{0, 100}});
  // Against 800-milli tasks (p = 0.05): machine 1 strands 700 (+35),
  // machine 2 600 (+30). Exact FGD takes machine 2; the simulator's score
  // floor(100 sigmoid(-delta / 1000)) is 49 for both, so machine 1.
  BaselineOptions options = Workload(800);
  cluster::TaskShape shape = options.target_workload.shapes()[0];
  shape.popularity = 0.05;
  options.target_workload = cluster::TargetWorkload::FromShapes({shape});
  EXPECT_THAT(Schedule("fgd", gpu.state(), options),
              ElementsAre(P(2, 2, {{0, 300}})));
  EXPECT_THAT(Schedule("fgd-sigmoid", gpu.state(), options),
              ElementsAre(P(2, 1, {{0, 300}})));
}

TEST(GpuBaselinesTest, PackingPrefersSharedThenUsedNodesThenEmptyOnes) {
  GpuState gpu;
  gpu.Machine(1, 2).Machine(2, 2).Machine(3, 2);
  gpu.Task(1, 1000, 1).Task(2, 500).Task(3, 300).Task(4, 0, 1);
  gpu.Run(1, 2, {{0, 1000}}).Run(2, 3, {{0, 500}});
  // Task 3 (300 milli) shares machine 3's device 0 (score 95); task 4 (a
  // whole device) takes an unused device of a used machine (49; machines 2
  // and 3 tie, the lowest id wins) over the empty machine 1 (31).
  EXPECT_THAT(Schedule("packing", gpu.state()),
              ElementsAre(P(3, 3, {{0, 300}}), P(4, 2, {{1, 1000}})));
}

TEST(GpuBaselinesTest, ClusteringGroupsEqualAsks) {
  GpuState gpu;
  gpu.Machine(1, 2).Machine(2, 2).Machine(3, 2);
  gpu.Task(1, 500).Task(2, 0, 1).Task(3, 250).Task(4, 0, 1).Task(5, 0, 2);
  gpu.Run(1, 1, {{0, 500}}).Run(2, 2, {{0, 1000}});
  // Any fraction joins the fractions of machine 1 (the simulator's
  // "share-gpu" tag), a whole device the whole device of machine 2, and
  // two whole devices, which nobody runs, the machine without device
  // users (tier 25) rather than one with other asks.
  EXPECT_THAT(Schedule("clustering", gpu.state()),
              ElementsAre(P(3, 1, {{0, 250}}), P(4, 2, {{1, 1000}}),
                          P(5, 3, {{0, 1000}, {1, 1000}})));
}

TEST(GpuBaselinesTest, RandomIsSeededAndSpreads) {
  GpuState gpu;
  for (uint64_t m = 1; m <= 4; ++m) gpu.Machine(m, 8);
  for (uint64_t t = 1; t <= 100; ++t) gpu.Task(t, 100);  // CPU: 32 a machine
  const auto first = Schedule("random", gpu.state(), {.seed = 7});
  EXPECT_EQ(first, Schedule("random", gpu.state(), {.seed = 7}));
  EXPECT_NE(first, Schedule("random", gpu.state(), {.seed = 8}));
  ASSERT_EQ(first.size(), 100u);
  std::map<MachineId, int> per_machine;
  for (const BaselinePlacement& p : first) ++per_machine[p.machine];
  ASSERT_EQ(per_machine.size(), 4u);
  for (const auto& [machine, count] : per_machine) {
    EXPECT_GT(count, 10) << machine.value();
    EXPECT_LT(count, 32) << machine.value();
  }
}

TEST(GpuBaselinesTest, BatchesNeverOverCommitAndApplyAsNamed) {
  for (std::string_view name : {"random", "dot-product", "clustering",
                                "packing", "best-fit", "fgd", "fgd-sigmoid"}) {
    GpuState gpu;
    gpu.Machine(1, 2).Machine(2, 4);
    // 6 whole devices of room; asks for 9.
    for (uint64_t t = 1; t <= 6; ++t) gpu.Task(t, 700);
    for (uint64_t t = 7; t <= 9; ++t) gpu.Task(t, 0, 1);
    const auto placements = Schedule(name, gpu.state());
    cluster::ChangeSet changes;
    for (const BaselinePlacement& p : placements) {
      EXPECT_FALSE(p.devices.empty()) << name;
      EXPECT_THAT(gpu.state().Place(p.task, p.machine, 0, changes, p.devices),
                  IsOk())
          << name;
    }
    EXPECT_EQ(placements.size(), 6u) << name;
    for (const auto& [id, machine] : gpu.state().machines()) {
      EXPECT_TRUE(cluster::WithinCapacity(machine)) << name;
    }
  }
}

}  // namespace
}  // namespace flowsched::baselines
