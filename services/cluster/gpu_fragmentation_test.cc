#include "services/cluster/gpu_fragmentation.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "services/common/byte_units.h"

namespace flowsched::cluster {
namespace {

// 8 cores, 16 GiB, two devices of model "A"; device 0 has 700 milli used.
Machine HalfUsedMachine() {
  Machine machine;
  machine.id = MachineId(1);
  machine.task_slots = 10;
  machine.capacity = {.cpu_millis = 8000, .memory_bytes = 16 * kGiB};
  machine.devices = ExpandAccelerators({{.count = 2, .model = "A"}});
  machine.devices[0].used_milli = 700;
  return machine;
}

TaskShape Shape(AcceleratorRequest accelerator, double popularity,
                int64_t cpu_millis = 1000) {
  return {.cpu_millis = cpu_millis,
          .memory_bytes = kGiB,
          .accelerator = std::move(accelerator),
          .popularity = popularity};
}

// p = 0.5: 500 milli; 0.3: one whole device; 0.2: two whole devices.
TargetWorkload ThreeShapes() {
  return TargetWorkload::FromShapes({Shape({.milli = 500}, 0.5),
                                     Shape({.whole = 1}, 0.3),
                                     Shape({.whole = 2}, 0.2)});
}

TaskSpec FractionalTask(uint64_t id, int64_t milli) {
  TaskSpec task;
  task.id = TaskId(id);
  task.request = {.cpu_millis = 500, .memory_bytes = kGiB};
  task.accelerator.milli = milli;
  return task;
}

TEST(GpuFragmentationTest, NodeFragmentationByHand) {
  const Machine machine = HalfUsedMachine();
  // Idle: 300 + 1000. 500 milli and one device run, stranding device 0's
  // 300; two devices do not run: all 1,300.
  // 0.5 * 300 + 0.3 * 300 + 0.2 * 1300 = 500.
  EXPECT_EQ(IdleDeviceMilli(machine), 1300);
  EXPECT_DOUBLE_EQ(NodeFragmentation(machine, ThreeShapes()), 500);
}

TEST(GpuFragmentationTest, ShapesThatCannotRunCountAllIdleMilli) {
  const Machine machine = HalfUsedMachine();
  const TargetWorkload cpu_only = TargetWorkload::FromShapes({Shape({}, 1.0)});
  const TargetWorkload too_much_cpu =
      TargetWorkload::FromShapes({Shape({.milli = 100}, 1.0, 9000)});
  const TargetWorkload other_model = TargetWorkload::FromShapes(
      {Shape({.milli = 100, .models = std::vector<std::string>{"B"}}, 1.0)});
  const TargetWorkload this_model = TargetWorkload::FromShapes({Shape(
      {.milli = 400, .models = std::vector<std::string>{"B", "A"}}, 1.0)});
  EXPECT_DOUBLE_EQ(NodeFragmentation(machine, cpu_only), 1300);
  EXPECT_DOUBLE_EQ(NodeFragmentation(machine, too_much_cpu), 1300);
  EXPECT_DOUBLE_EQ(NodeFragmentation(machine, other_model), 1300);
  EXPECT_DOUBLE_EQ(NodeFragmentation(machine, this_model), 300);
  Machine full = machine;
  full.task_slots = 0;
  EXPECT_DOUBLE_EQ(NodeFragmentation(full, this_model), 1300);
}

TEST(GpuFragmentationTest, DeltaOfEachDeviceChoiceByHand) {
  const Machine machine = HalfUsedMachine();
  const TargetWorkload workload = ThreeShapes();
  const TaskSpec task = FractionalTask(7, 200);
  // On device 0 (free 100 / 1000): 0.5*100 + 0.3*100 + 0.2*1100 = 300.
  EXPECT_DOUBLE_EQ(FragmentationDelta(machine, workload, task,
                                      std::vector<DeviceShare>{{0, 200}}),
                   -200);
  // On device 1 (free 300 / 800): 500 still runs (300 stranded), no whole
  // device is left: 0.5*300 + 0.3*1100 + 0.2*1100 = 700.
  EXPECT_DOUBLE_EQ(FragmentationDelta(machine, workload, task,
                                      std::vector<DeviceShare>{{1, 200}}),
                   200);
  // The machine itself is untouched.
  EXPECT_DOUBLE_EQ(NodeFragmentation(machine, workload), 500);
}

TEST(GpuFragmentationTest, DeltaCountsCpuAndSlots) {
  Machine machine = HalfUsedMachine();
  const TargetWorkload workload =
      TargetWorkload::FromShapes({Shape({.milli = 100}, 1.0, 4000)});
  EXPECT_DOUBLE_EQ(NodeFragmentation(machine, workload), 0);
  TaskSpec cpu_task;
  cpu_task.id = TaskId(9);
  cpu_task.request.cpu_millis = 5000;  // leaves 3,000: the shape cannot run
  EXPECT_DOUBLE_EQ(FragmentationDelta(machine, workload, cpu_task, {}), 1300);
  machine.task_slots = 1;
  EXPECT_DOUBLE_EQ(
      FragmentationDelta(machine, workload, FractionalTask(3, 1), {}), 1300);
}

TEST(GpuFragmentationTest, BuildKeepsTheMostPopularShapesAndRenormalises) {
  std::vector<TaskSpec> tasks;
  for (uint64_t i = 0; i < 6; ++i) tasks.push_back(FractionalTask(i, 500));
  for (uint64_t i = 6; i < 9; ++i) tasks.push_back(FractionalTask(i, 250));
  tasks.push_back(FractionalTask(9, 100));
  const TargetWorkload ninety = TargetWorkload::Build(tasks, 0.9);
  ASSERT_EQ(ninety.shapes().size(), 2u);
  EXPECT_EQ(ninety.shapes()[0].accelerator.milli, 500);
  EXPECT_DOUBLE_EQ(ninety.shapes()[0].popularity, 6.0 / 9.0);
  EXPECT_EQ(ninety.shapes()[1].accelerator.milli, 250);
  EXPECT_DOUBLE_EQ(ninety.shapes()[1].popularity, 3.0 / 9.0);
  EXPECT_EQ(TargetWorkload::Build(tasks, 0.95).shapes().size(), 3u);
  ASSERT_EQ(TargetWorkload::Build(tasks, 0.5).shapes().size(), 1u);
  EXPECT_DOUBLE_EQ(TargetWorkload::Build(tasks, 0.5).shapes()[0].popularity,
                   1.0);
  EXPECT_TRUE(TargetWorkload::Build({}, 0.95).shapes().empty());
}

TEST(GpuFragmentationTest, ClusterRates) {
  std::map<MachineId, Machine> machines;
  machines[MachineId(1)] = HalfUsedMachine();
  Machine empty = HalfUsedMachine();
  empty.id = MachineId(2);
  empty.devices[0].used_milli = 0;
  machines[MachineId(2)] = empty;
  const ClusterFragmentation total =
      MeasureFragmentation(machines, ThreeShapes());
  // Machine 2: everything runs, nothing stranded.
  EXPECT_DOUBLE_EQ(total.fragmented_milli, 500);
  EXPECT_EQ(total.idle_milli, 3300);
  EXPECT_EQ(total.capacity_milli, 4000);
  EXPECT_DOUBLE_EQ(total.rate_of_idle(), 500.0 / 3300.0);
  EXPECT_DOUBLE_EQ(total.rate_of_capacity(), 500.0 / 4000.0);
}

}  // namespace
}  // namespace flowsched::cluster
