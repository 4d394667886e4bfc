#include "services/baselines/scheduling_util.h"

namespace flowsched::baselines {

cluster::InputLocation ComputeLocality(const cluster::Task& task,
                                       const cluster::ClusterState& state) {
  return cluster::LocateInput(
      task.spec.input, task.spec.input_bytes,
      [&](const cluster::DataLocality& entry) -> const std::string* {
        const cluster::Machine* machine = state.FindMachine(entry.machine);
        if (machine != nullptr) return &machine->rack;
        return entry.rack.empty() ? nullptr : &entry.rack;
      });
}

void Reserve(cluster::Machine& machine, const cluster::Task& task) {
  machine.running.insert(task.spec.id);
  machine.allocated.cpu_millis += task.spec.request.cpu_millis;
  machine.allocated.memory_bytes += task.spec.request.memory_bytes;
  machine.allocated.network_bytes_per_sec +=
      task.spec.request.network_bytes_per_sec;
}

}  // namespace flowsched::baselines
