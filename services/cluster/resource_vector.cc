#include "services/cluster/resource_vector.h"

#include <algorithm>

#include "services/cluster/gpu_fragmentation.h"

namespace flowsched::cluster {

ResourceVector ComputeMaxSpec(const ClusterState& state) {
  ResourceVector spec{1, 1, 1};
  for (const auto& [id, machine] : state.machines()) {
    spec.cpu_millis = std::max(
        spec.cpu_millis, static_cast<double>(machine.capacity.cpu_millis));
    spec.memory_bytes = std::max(
        spec.memory_bytes, static_cast<double>(machine.capacity.memory_bytes));
    int64_t milli = 0;
    for (const Device& device : machine.devices) {
      milli += device.capacity_milli;
    }
    spec.device_milli = std::max(spec.device_milli, static_cast<double>(milli));
  }
  return spec;
}

ResourceVector ComputeFree(const Machine& machine) {
  ResourceVector free;
  const Resources& capacity = machine.capacity;
  const Resources& allocated = machine.allocated;
  if (capacity.cpu_millis > 0) {
    free.cpu_millis =
        static_cast<double>(capacity.cpu_millis - allocated.cpu_millis);
  }
  if (capacity.memory_bytes > 0) {
    free.memory_bytes =
        static_cast<double>(capacity.memory_bytes - allocated.memory_bytes);
  }
  free.device_milli = static_cast<double>(IdleDeviceMilli(machine));
  return free;
}

ResourceVector RequestVector(const TaskSpec& task) {
  return {.cpu_millis = static_cast<double>(task.request.cpu_millis),
          .memory_bytes = static_cast<double>(task.request.memory_bytes),
          .device_milli = static_cast<double>(task.accelerator.total_milli())};
}

ResourceVector Normalised(const ResourceVector& v,
                          const ResourceVector& max_spec) {
  return {.cpu_millis = v.cpu_millis / max_spec.cpu_millis,
          .memory_bytes = v.memory_bytes / max_spec.memory_bytes,
          .device_milli = v.device_milli / max_spec.device_milli};
}

double BestFitLeftover(const Machine& machine, const TaskSpec& task,
                       const ResourceVector& max_spec) {
  const ResourceVector free = Normalised(ComputeFree(machine), max_spec);
  const ResourceVector request = Normalised(RequestVector(task), max_spec);
  // A dimension the machine does not report (capacity 0) does not bound
  // it (FitTask), so it leaves nothing and owes nothing here.
  const Resources& capacity = machine.capacity;
  return (capacity.cpu_millis > 0 ? free.cpu_millis - request.cpu_millis : 0) +
         (capacity.memory_bytes > 0 ? free.memory_bytes - request.memory_bytes
                                    : 0) +
         (free.device_milli - request.device_milli);
}

}  // namespace flowsched::cluster
