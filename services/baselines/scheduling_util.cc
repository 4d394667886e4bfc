#include "services/baselines/scheduling_util.h"

namespace flowsched::baselines {

cluster::InputLocation ComputeLocality(const cluster::Task& task,
                                       const cluster::ClusterState& state) {
  return cluster::LocateInput(task.spec, state);
}

void Reserve(cluster::Machine& machine, const cluster::Task& task) {
  const cluster::Fit fit = cluster::FitTask(machine, task.spec);
  machine.running.insert(task.spec.id);
  cluster::BookTask(machine, task.spec, fit.devices);
}

}  // namespace flowsched::baselines
