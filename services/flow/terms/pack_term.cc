#include "services/flow/terms/pack_term.h"

#include <algorithm>

namespace flowsched::flow {

void PackTerm::Prepare(const cluster::ClusterState& state) {
  max_spec_ = cluster::ComputeMaxSpec(state);
}

double PackTerm::Value(const cluster::Machine& machine,
                       const RequestShape& shape, int64_t k) const {
  (void)k;
  const double leftover =
      cluster::BestFitLeftover(machine, shape.ask, max_spec_) / 3.0;
  return std::clamp(leftover, 0.0, 1.0);
}

}  // namespace flowsched::flow
