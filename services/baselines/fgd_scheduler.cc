#include "services/baselines/fgd_scheduler.h"

#include <cmath>
#include <vector>

#include "services/cluster/resource_fit.h"

namespace flowsched::baselines {

void FgdScheduler::BeginRound(const cluster::ClusterState& state) {
  if (built_) return;
  std::vector<cluster::TaskSpec> specs;
  specs.reserve(state.tasks().size());
  for (const auto& [id, task] : state.tasks()) specs.push_back(task.spec);
  workload_ = cluster::TargetWorkload::Build(specs);
  built_ = true;
}

double FgdScheduler::Cost(double delta) const {
  if (!sigmoid_score_) return delta;
  return -std::floor(100.0 / (1.0 + std::exp(delta / 1000.0)));
}

std::optional<NodeChoice> FgdScheduler::Evaluate(
    const cluster::Machine& machine, const cluster::Task& task,
    const cluster::Fit& fit) {
  const cluster::TaskSpec& spec = task.spec;
  if (spec.accelerator.milli == 0) {
    return NodeChoice{.cost = Cost(cluster::FragmentationDelta(
                          machine, workload_, spec, fit.devices)),
                      .devices = fit.devices};
  }
  std::optional<NodeChoice> best;
  for (uint32_t i = 0; i < machine.devices.size(); ++i) {
    const cluster::Device& device = machine.devices[i];
    bool seen = false;
    for (uint32_t j = 0; j < i && !seen; ++j) {
      seen = machine.devices[j].free_milli() == device.free_milli() &&
             machine.devices[j].model == device.model;
    }
    if (seen) continue;
    const cluster::DeviceShare share{i, spec.accelerator.milli};
    if (!cluster::FitTaskOnDevices(machine, spec, {&share, 1}).fits()) {
      continue;
    }
    const double cost = Cost(
        cluster::FragmentationDelta(machine, workload_, spec, {&share, 1}));
    if (!best.has_value() || cost < best->cost) {
      best = NodeChoice{.cost = cost, .devices = {share}};
    }
  }
  return best;
}

}  // namespace flowsched::baselines
