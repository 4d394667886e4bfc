#include "services/flow/terms/preferred_labels_term.h"

#include "services/flow/constraints.h"

namespace flowsched::flow {

double PreferredLabelsTerm::Value(const cluster::Machine& machine,
                                  const RequestShape& shape, int64_t k) const {
  (void)k;
  return !shape.preferred.empty() &&
                 LabelsMatch(machine.labels, shape.preferred)
             ? -1.0
             : 0.0;
}

}  // namespace flowsched::flow
