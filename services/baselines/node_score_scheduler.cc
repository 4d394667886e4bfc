#include "services/baselines/node_score_scheduler.h"

#include <algorithm>

#include "services/baselines/scheduling_util.h"
#include "services/cluster/gpu_fragmentation.h"

namespace flowsched::baselines {

std::vector<BaselinePlacement> NodeScoreScheduler::Schedule(
    const cluster::ClusterState& state) {
  BeginRound(state);
  // Machines a task of this round was booked on, as booked.
  std::map<MachineId, cluster::Machine> scratch;
  std::vector<BaselinePlacement> placements;
  for (const auto& [task_id, task] : state.tasks()) {
    if (task.running()) continue;
    MachineId best;
    std::optional<NodeChoice> best_choice;
    std::vector<cluster::DeviceShare> best_devices;
    for (const auto& [machine_id, original] : state.machines()) {
      auto it = scratch.find(machine_id);
      const cluster::Machine& machine =
          it == scratch.end() ? original : it->second;
      cluster::Fit fit = cluster::FitTask(machine, task.spec);
      if (!fit.fits()) continue;
      std::optional<NodeChoice> choice = Evaluate(machine, task, fit);
      // Strictly less: machines come in id order, ties keep the lowest.
      if (!choice.has_value() ||
          (best_choice.has_value() && !(choice->cost < best_choice->cost))) {
        continue;
      }
      best = machine_id;
      best_devices =
          choice->devices.empty() ? std::move(fit.devices) : choice->devices;
      best_choice = std::move(choice);
    }
    if (!best_choice.has_value()) continue;
    auto it = scratch.find(best);
    if (it == scratch.end()) {
      it = scratch.emplace(best, *state.FindMachine(best)).first;
    }
    it->second.running.insert(task_id);
    cluster::BookTask(it->second, task.spec, best_devices);
    placements.push_back({task_id, best, std::move(best_devices)});
  }
  return placements;
}

ResourceVector ComputeMaxSpec(const cluster::ClusterState& state) {
  ResourceVector spec{1, 1, 1};
  for (const auto& [id, machine] : state.machines()) {
    spec.cpu_millis = std::max(
        spec.cpu_millis, static_cast<double>(machine.capacity.cpu_millis));
    spec.memory_bytes = std::max(
        spec.memory_bytes, static_cast<double>(machine.capacity.memory_bytes));
    int64_t milli = 0;
    for (const cluster::Device& device : machine.devices) {
      milli += device.capacity_milli;
    }
    spec.device_milli = std::max(spec.device_milli, static_cast<double>(milli));
  }
  return spec;
}

ResourceVector ComputeFree(const cluster::Machine& machine) {
  ResourceVector free;
  const cluster::Resources& capacity = machine.capacity;
  const cluster::Resources& allocated = machine.allocated;
  if (capacity.cpu_millis > 0) {
    free.cpu_millis =
        static_cast<double>(capacity.cpu_millis - allocated.cpu_millis);
  }
  if (capacity.memory_bytes > 0) {
    free.memory_bytes =
        static_cast<double>(capacity.memory_bytes - allocated.memory_bytes);
  }
  free.device_milli = static_cast<double>(cluster::IdleDeviceMilli(machine));
  return free;
}

ResourceVector RequestVector(const cluster::TaskSpec& task) {
  const cluster::AcceleratorRequest& ask = task.accelerator;
  return {.cpu_millis = static_cast<double>(task.request.cpu_millis),
          .memory_bytes = static_cast<double>(task.request.memory_bytes),
          .device_milli = static_cast<double>(ask.total_milli())};
}

ResourceVector Normalised(const ResourceVector& v,
                          const ResourceVector& max_spec) {
  return {.cpu_millis = v.cpu_millis / max_spec.cpu_millis,
          .memory_bytes = v.memory_bytes / max_spec.memory_bytes,
          .device_milli = v.device_milli / max_spec.device_milli};
}

}  // namespace flowsched::baselines
