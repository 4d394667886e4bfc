#include "services/flow/terms/task_count_term.h"

namespace flowsched::flow {

double TaskCountTerm::Value(const cluster::Machine& machine,
                            const RequestShape& /*shape*/, int64_t k) const {
  return static_cast<double>(static_cast<int64_t>(machine.running.size()) + k -
                             1);
}

}  // namespace flowsched::flow
