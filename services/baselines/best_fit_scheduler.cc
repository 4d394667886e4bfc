#include "services/baselines/best_fit_scheduler.h"

namespace flowsched::baselines {

std::optional<NodeChoice> BestFitScheduler::Evaluate(
    const cluster::Machine& machine, const cluster::Task& task,
    const cluster::Fit&) {
  const FreeVector free = ComputeFree(machine);
  const cluster::Resources& request = task.spec.request;
  const double leftover =
      (free.cpu_millis - static_cast<double>(request.cpu_millis)) /
          max_.cpu_millis +
      (free.memory_bytes - static_cast<double>(request.memory_bytes)) /
          max_.memory_bytes +
      (free.device_milli -
       static_cast<double>(RequestedDeviceMilli(task.spec))) /
          max_.device_milli;
  return NodeChoice{.cost = leftover};
}

}  // namespace flowsched::baselines
