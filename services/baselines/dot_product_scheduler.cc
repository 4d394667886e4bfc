#include "services/baselines/dot_product_scheduler.h"

namespace flowsched::baselines {

std::optional<NodeChoice> DotProductScheduler::Evaluate(
    const cluster::Machine& machine, const cluster::Task& task,
    const cluster::Fit&) {
  const ResourceVector free = NormalisedFree(machine);
  const ResourceVector request = NormalisedRequest(task.spec);
  // The largest alignment wins: the cost is its negation.
  return NodeChoice{.cost = -(free.cpu_millis * request.cpu_millis +
                              free.memory_bytes * request.memory_bytes +
                              free.device_milli * request.device_milli)};
}

}  // namespace flowsched::baselines
