#include "services/flow/terms/locality_term.h"

namespace flowsched::flow {

double LocalityTerm::Value(const cluster::Machine& machine,
                           const RequestShape& shape, int64_t k) const {
  (void)k;
  if (shape.input_racks.empty()) return 0;
  for (const RackShare& rack : shape.input_racks) {
    if (rack.rack == machine.rack) return 1.0 - rack.share;
  }
  return 1;
}

}  // namespace flowsched::flow
