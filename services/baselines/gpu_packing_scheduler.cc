#include "services/baselines/gpu_packing_scheduler.h"

#include <algorithm>
#include <cstdint>

namespace flowsched::baselines {
namespace {

bool Unused(const cluster::Device& device) {
  return device.used_milli == 0 && device.tasks.empty();
}

}  // namespace

std::optional<NodeChoice> GpuPackingScheduler::Evaluate(
    const cluster::Machine& machine, const cluster::Task& task,
    const cluster::Fit& fit) {
  if (task.spec.accelerator.empty()) return NodeChoice{.cost = 0};
  const auto unused = static_cast<int64_t>(
      std::count_if(machine.devices.begin(), machine.devices.end(), Unused));
  int64_t score = 0;
  if (unused == static_cast<int64_t>(machine.devices.size())) {
    score = std::max<int64_t>(33 - unused, unused);
  } else {
    int64_t unused_taken = 0;
    int64_t free_percent = 0;
    for (const cluster::DeviceShare& share : fit.devices) {
      const cluster::Device& device = machine.devices[share.index];
      unused_taken += Unused(device) ? 1 : 0;
      free_percent += device.free_milli() * 100 / cluster::kMilliPerDevice;
    }
    score = unused_taken > 0 ? std::max<int64_t>(50 - unused_taken, 33)
                             : std::max<int64_t>(100 - free_percent / 10, 50);
  }
  return NodeChoice{.cost = -static_cast<double>(score)};
}

}  // namespace flowsched::baselines
