#include "services/baselines/best_fit_scheduler.h"

namespace flowsched::baselines {

std::optional<NodeChoice> BestFitScheduler::Evaluate(
    const cluster::Machine& machine, const cluster::Task& task,
    const cluster::Fit&) {
  return NodeChoice{
      .cost = cluster::BestFitLeftover(machine, task.spec, max_spec_)};
}

}  // namespace flowsched::baselines
