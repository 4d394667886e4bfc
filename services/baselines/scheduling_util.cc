#include "services/baselines/scheduling_util.h"

namespace flowsched::baselines {

TaskLocality ComputeLocality(const cluster::Task& task,
                             const cluster::ClusterState& state) {
  TaskLocality locality;
  int64_t sum = 0;
  for (const cluster::DataLocality& entry : task.spec.input) {
    if (entry.bytes <= 0) continue;
    sum += entry.bytes;
    if (entry.machine.value() == 0) {
      locality.rack_bytes[entry.rack] += entry.bytes;
      continue;
    }
    locality.machine_bytes[entry.machine] += entry.bytes;
    // The machine's own rack is authoritative; the entry's rack is only a
    // fallback for a machine the state no longer knows.
    const cluster::Machine* machine = state.FindMachine(entry.machine);
    locality.rack_bytes[machine != nullptr ? machine->rack : entry.rack] +=
        entry.bytes;
  }
  locality.total_bytes = task.spec.input_bytes > 0 ? task.spec.input_bytes : sum;
  return locality;
}

void Reserve(cluster::Machine& machine, const cluster::Task& task) {
  machine.running.insert(task.spec.id);
  machine.allocated.cpu_millis += task.spec.request.cpu_millis;
  machine.allocated.memory_bytes += task.spec.request.memory_bytes;
  machine.allocated.network_bytes_per_sec +=
      task.spec.request.network_bytes_per_sec;
}

}  // namespace flowsched::baselines
