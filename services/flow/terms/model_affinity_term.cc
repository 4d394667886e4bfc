#include "services/flow/terms/model_affinity_term.h"

namespace flowsched::flow {

double ModelAffinityTerm::Value(const cluster::Machine& machine,
                                const RequestShape& shape, int64_t k) const {
  (void)k;
  const cluster::AcceleratorRequest& ask = shape.ask.accelerator;
  if (ask.empty() || ask.preferred_models.empty()) return 0;
  int64_t acceptable = 0;
  int64_t other = 0;
  for (const cluster::Device& device : machine.devices) {
    if (!ask.AcceptsModel(device.model)) continue;
    ++acceptable;
    if (!ask.PrefersModel(device.model)) ++other;
  }
  return acceptable == 0
             ? 0.0
             : static_cast<double>(other) / static_cast<double>(acceptable);
}

}  // namespace flowsched::flow
