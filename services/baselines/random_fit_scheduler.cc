#include "services/baselines/random_fit_scheduler.h"

namespace flowsched::baselines {

std::optional<NodeChoice> RandomFitScheduler::Evaluate(const cluster::Machine&,
                                                       const cluster::Task&,
                                                       const cluster::Fit&) {
  return NodeChoice{.cost = std::uniform_real_distribution<double>()(rng_)};
}

}  // namespace flowsched::baselines
