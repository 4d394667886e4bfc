#include "services/baselines/best_fit_scheduler.h"

namespace flowsched::baselines {

std::optional<NodeChoice> BestFitScheduler::Evaluate(
    const cluster::Machine& machine, const cluster::Task& task,
    const cluster::Fit&) {
  const ResourceVector free = NormalisedFree(machine);
  const ResourceVector request = NormalisedRequest(task.spec);
  return NodeChoice{.cost = (free.cpu_millis - request.cpu_millis) +
                            (free.memory_bytes - request.memory_bytes) +
                            (free.device_milli - request.device_milli)};
}

}  // namespace flowsched::baselines
