#include "services/cluster/resource_vector.h"

#include "gtest/gtest.h"
#include "services/common/byte_units.h"

namespace flowsched::cluster {
namespace {

Machine MachineWith(int64_t cpu, int64_t memory, uint32_t gpus) {
  Machine machine;
  machine.capacity = {.cpu_millis = cpu, .memory_bytes = memory};
  for (uint32_t i = 0; i < gpus; ++i) {
    machine.devices.push_back(Device{.capacity_milli = kMilliPerDevice});
  }
  return machine;
}

// Largest machine: 8 cores, 64 GiB, 4 GPUs. The small one keeps 2 of 4
// cores (0.25 of the max), 16 of 32 GiB (0.25) and 1,500 of 2,000 milli
// (0.375) after a task of 2 cores, 16 GiB and half a GPU.
TEST(ResourceVectorTest, BestFitLeftoverIsTheNormalisedRemainder) {
  Machine small = MachineWith(4000, 32 * kGiB, 2);
  const ResourceVector max_spec{8000, 64.0 * kGiB, 4000};
  TaskSpec task{.request = {.cpu_millis = 2000, .memory_bytes = 16 * kGiB}};
  task.accelerator.milli = 500;
  EXPECT_DOUBLE_EQ(BestFitLeftover(small, task, max_spec), 0.25 + 0.25 + 0.375);
  // Allocations count as taken: a machine filled exactly leaves 0.
  small.allocated = {.cpu_millis = 2000, .memory_bytes = 16 * kGiB};
  small.devices[0].used_milli = 1000;
  small.devices[1].used_milli = 500;
  EXPECT_DOUBLE_EQ(BestFitLeftover(small, task, max_spec), 0);
  // Unreported CPU and memory (capacity 0) count nothing either way.
  Machine unreported = MachineWith(0, 0, 2);
  EXPECT_DOUBLE_EQ(BestFitLeftover(unreported, task, max_spec), 0.375);
}

}  // namespace
}  // namespace flowsched::cluster
