#include "services/flow/terms/model_affinity_term.h"

#include "services/cluster/resource_fit.h"

namespace flowsched::flow {

double ModelAffinityTerm::Value(const cluster::Machine& machine,
                                const RequestShape& shape, int64_t k) const {
  (void)k;
  const cluster::AcceleratorRequest& ask = shape.ask.accelerator;
  if (ask.empty() || ask.preferred_models.empty()) return 0;
  const cluster::Fit fit = cluster::FitTask(machine, shape.ask);
  if (!fit.fits() || fit.devices.empty()) return 0;
  int64_t other = 0;
  for (const cluster::DeviceShare& share : fit.devices) {
    if (!ask.PrefersModel(machine.devices[share.index].model)) ++other;
  }
  return static_cast<double>(other) / static_cast<double>(fit.devices.size());
}

}  // namespace flowsched::flow
