#include "services/cluster/gpu_fragmentation.h"

#include <algorithm>
#include <array>
#include <tuple>
#include <utility>

namespace flowsched::cluster {
namespace {

using ShapeKey = std::tuple<int64_t, int64_t, uint32_t, int64_t,
                            std::optional<std::vector<std::string>>>;

ShapeKey KeyOf(const TaskSpec& task) {
  return {task.request.cpu_millis, task.request.memory_bytes,
          task.accelerator.whole, task.accelerator.milli,
          task.accelerator.models};
}

// What the measure reads of a machine, copied so a booking can be tried
// without touching the machine. Devices beyond the validation cap are not
// expected (ValidationLimits::max_devices_per_machine is 64).
struct NodeView {
  static constexpr size_t kMaxDevices = 64;
  bool has_slot = false;
  int64_t cpu_capacity = 0, cpu_free = 0;
  int64_t memory_capacity = 0, memory_free = 0;
  size_t device_count = 0;
  std::array<int64_t, kMaxDevices> free_milli;  // [0, device_count) set
  std::array<int64_t, kMaxDevices> capacity_milli;
  std::array<const std::string*, kMaxDevices> model;
  int64_t idle_milli = 0;
};

NodeView ViewOf(const Machine& machine) {
  NodeView view;
  view.has_slot = machine.free_slots() > 0;
  view.cpu_capacity = machine.capacity.cpu_millis;
  view.cpu_free = machine.capacity.cpu_millis - machine.allocated.cpu_millis;
  view.memory_capacity = machine.capacity.memory_bytes;
  view.memory_free =
      machine.capacity.memory_bytes - machine.allocated.memory_bytes;
  view.device_count = std::min(machine.devices.size(), NodeView::kMaxDevices);
  for (size_t i = 0; i < view.device_count; ++i) {
    const Device& device = machine.devices[i];
    view.free_milli[i] = device.free_milli();
    view.capacity_milli[i] = device.capacity_milli;
    view.model[i] = &device.model;
    view.idle_milli += device.free_milli();
  }
  return view;
}

// FitTask's reading of a dimension: capacity 0 is unreported (unbounded).
bool HasRoom(int64_t capacity, int64_t free, int64_t request) {
  return capacity == 0 || request <= 0 || request <= free;
}

// F_n(m) in milli (see the header).
int64_t ShapeFragmentation(const NodeView& view, const TaskShape& shape) {
  const AcceleratorRequest& ask = shape.accelerator;
  if (ask.empty() || !view.has_slot ||
      !HasRoom(view.cpu_capacity, view.cpu_free, shape.cpu_millis) ||
      !HasRoom(view.memory_capacity, view.memory_free, shape.memory_bytes)) {
    return view.idle_milli;
  }
  uint32_t usable = 0;
  int64_t unusable_milli = 0;
  for (size_t i = 0; i < view.device_count; ++i) {
    const int64_t need = ask.milli > 0 ? ask.milli : view.capacity_milli[i];
    if (view.free_milli[i] >= need && ask.AcceptsModel(*view.model[i])) {
      ++usable;
    } else {
      unusable_milli += view.free_milli[i];
    }
  }
  return usable >= ask.device_count() ? unusable_milli : view.idle_milli;
}

double Fragmentation(const NodeView& view, const TargetWorkload& workload) {
  if (view.idle_milli == 0) return 0;
  double sum = 0;
  for (const TaskShape& shape : workload.shapes()) {
    sum +=
        shape.popularity * static_cast<double>(ShapeFragmentation(view, shape));
  }
  return sum;
}

}  // namespace

TargetWorkload TargetWorkload::Build(std::span<const TaskSpec> tasks,
                                     double coverage) {
  std::map<ShapeKey, int64_t> counts;
  for (const TaskSpec& task : tasks) ++counts[KeyOf(task)];
  std::vector<std::pair<int64_t, const ShapeKey*>> ranked;
  ranked.reserve(counts.size());
  for (const auto& [key, count] : counts) ranked.emplace_back(count, &key);
  // Stable: equal counts keep the map's (ascending key) order.
  std::stable_sort(
      ranked.begin(), ranked.end(),
      [](const auto& a, const auto& b) { return a.first > b.first; });
  const double wanted = coverage * static_cast<double>(tasks.size());
  int64_t kept = 0;
  TargetWorkload workload;
  for (const auto& [count, key] : ranked) {
    if (kept > 0 && static_cast<double>(kept) >= wanted) break;
    kept += count;
    TaskShape& shape = workload.shapes_.emplace_back();
    shape.cpu_millis = std::get<0>(*key);
    shape.memory_bytes = std::get<1>(*key);
    shape.accelerator.whole = std::get<2>(*key);
    shape.accelerator.milli = std::get<3>(*key);
    shape.accelerator.models = std::get<4>(*key);
    shape.popularity = static_cast<double>(count);
  }
  for (TaskShape& shape : workload.shapes_) {
    shape.popularity /= static_cast<double>(kept);
  }
  return workload;
}

TargetWorkload TargetWorkload::FromShapes(std::vector<TaskShape> shapes) {
  TargetWorkload workload;
  workload.shapes_ = std::move(shapes);
  return workload;
}

int64_t IdleDeviceMilli(const Machine& machine) {
  int64_t idle = 0;
  for (const Device& device : machine.devices) idle += device.free_milli();
  return idle;
}

double NodeFragmentation(const Machine& machine,
                         const TargetWorkload& workload) {
  return Fragmentation(ViewOf(machine), workload);
}

double FragmentationDelta(const Machine& machine,
                          const TargetWorkload& workload, const TaskSpec& task,
                          std::span<const DeviceShare> devices) {
  NodeView view = ViewOf(machine);
  const double before = Fragmentation(view, workload);
  view.has_slot = machine.free_slots() > 1;
  view.cpu_free -= task.request.cpu_millis;
  view.memory_free -= task.request.memory_bytes;
  for (const DeviceShare& share : devices) {
    if (share.index >= view.device_count) continue;
    view.free_milli[share.index] -= share.milli;
    view.idle_milli -= share.milli;
  }
  return Fragmentation(view, workload) - before;
}

ClusterFragmentation MeasureFragmentation(
    const std::map<MachineId, Machine>& machines,
    const TargetWorkload& workload) {
  ClusterFragmentation total;
  for (const auto& [id, machine] : machines) {
    const NodeView view = ViewOf(machine);
    total.fragmented_milli += Fragmentation(view, workload);
    total.idle_milli += view.idle_milli;
    for (size_t i = 0; i < view.device_count; ++i) {
      total.capacity_milli += view.capacity_milli[i];
    }
  }
  return total;
}

}  // namespace flowsched::cluster
