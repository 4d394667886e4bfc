#include "services/baselines/fgd_scheduler.h"

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

std::optional<NodeChoice> FgdScheduler::Evaluate(
    const cluster::Machine& machine, const cluster::Task& task,
    const cluster::Fit& fit) {
  const cluster::TaskSpec& spec = task.spec;
  if (spec.accelerator.milli == 0) {
    return NodeChoice{
        .cost = cluster::FragmentationDelta(machine, workload_, spec,
                                            fit.devices),
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
    const double delta =
        cluster::FragmentationDelta(machine, workload_, spec, {&share, 1});
    if (!best.has_value() || delta < best->cost) {
      best = NodeChoice{.cost = delta, .devices = {share}};
    }
  }
  return best;
}

}  // namespace flowsched::baselines
