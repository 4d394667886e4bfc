#include "services/flow/terms/spread_term.h"

#include <algorithm>

namespace flowsched::flow {

double SpreadTerm::Value(const cluster::Machine& machine,
                         const RequestShape& shape, int64_t k) const {
  const cluster::Resources& request = shape.ask.request;
  double utilisation = 0;
  const auto dim = [&](int64_t cap, int64_t alloc, int64_t req) {
    if (cap <= 0) return;
    utilisation = std::max(utilisation,
                           (static_cast<double>(alloc) +
                            static_cast<double>(k) * static_cast<double>(req)) /
                               static_cast<double>(cap));
  };
  dim(machine.capacity.cpu_millis, machine.allocated.cpu_millis,
      request.cpu_millis);
  dim(machine.capacity.memory_bytes, machine.allocated.memory_bytes,
      request.memory_bytes);
  return std::min(utilisation, 1.0);
}

}  // namespace flowsched::flow
