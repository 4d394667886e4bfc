#include "services/flow/terms/fragmentation_term.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "services/cluster/resource_fit.h"

namespace flowsched::flow {

bool FragmentationTerm::Prepare(const cluster::ClusterState& state) {
  const size_t tasks = state.tasks().size();
  const size_t moved = tasks > workload_tasks_ ? tasks - workload_tasks_
                                               : workload_tasks_ - tasks;
  if (built_ && moved * 3 < workload_tasks_) return false;
  std::vector<cluster::TaskSpec> specs;
  specs.reserve(tasks);
  for (const auto& entry : state.tasks()) specs.push_back(entry.second.spec);
  workload_ = cluster::TargetWorkload::Build(specs, coverage_);
  workload_tasks_ = tasks;
  built_ = true;
  return true;
}

double FragmentationTerm::Value(const cluster::Machine& machine,
                                const RequestShape& shape, int64_t k) const {
  (void)k;
  const cluster::Fit fit = cluster::FitTask(machine, shape.ask);
  if (!fit.fits()) return 0;
  const double delta =
      cluster::FragmentationDelta(machine, workload_, shape.ask, fit.devices);
  if (levels_ == 0) return std::clamp(delta / kMaxDeltaMilli, -1.0, 1.0);
  const double levels = static_cast<double>(levels_);
  const double score = std::floor(levels / (1.0 + std::exp(delta / 1000.0)));
  return (levels - score) / levels;
}

}  // namespace flowsched::flow
