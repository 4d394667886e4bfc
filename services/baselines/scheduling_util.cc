#include "services/baselines/scheduling_util.h"

namespace flowsched::baselines {

cluster::InputLocation ComputeLocality(const cluster::Task& task,
                                       const cluster::ClusterState& state) {
  return cluster::LocateInput(task.spec, state);
}

void Reserve(cluster::Machine& machine, const cluster::Task& task) {
  machine.running.insert(task.spec.id);
  machine.allocated.cpu_millis += task.spec.request.cpu_millis;
  machine.allocated.memory_bytes += task.spec.request.memory_bytes;
  machine.allocated.network_bytes_per_sec +=
      task.spec.request.network_bytes_per_sec;
}

}  // namespace flowsched::baselines
