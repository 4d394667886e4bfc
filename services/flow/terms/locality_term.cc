#include "services/flow/terms/locality_term.h"

namespace flowsched::flow {

double LocalityTerm::Value(const cluster::Machine& machine,
                           const RequestShape& shape, int64_t k) const {
  (void)k;
  return shape.input_rack.empty() || machine.rack == shape.input_rack ? 0.0
                                                                      : 1.0;
}

}  // namespace flowsched::flow
