#include "services/flow/terms/pack_term.h"

#include <algorithm>

namespace flowsched::flow {

bool PackTerm::Prepare(const cluster::ClusterState& state) {
  const cluster::ResourceVector max_spec = cluster::ComputeMaxSpec(state);
  const bool changed = max_spec.cpu_millis != max_spec_.cpu_millis ||
                       max_spec.memory_bytes != max_spec_.memory_bytes ||
                       max_spec.device_milli != max_spec_.device_milli;
  max_spec_ = max_spec;
  return changed;
}

double PackTerm::Value(const cluster::Machine& machine,
                       const RequestShape& shape, int64_t k) const {
  (void)k;
  const double leftover =
      cluster::BestFitLeftover(machine, shape.ask, max_spec_) / 3.0;
  return std::clamp(leftover, -1.0, 1.0);
}

}  // namespace flowsched::flow
