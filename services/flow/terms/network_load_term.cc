#include "services/flow/terms/network_load_term.h"

#include <algorithm>

#include "services/common/byte_units.h"

namespace flowsched::flow {

int64_t NetworkLoadTerm::Load(const cluster::Machine& machine) {
  return std::max(machine.used.network_bytes_per_sec,
                  machine.allocated.network_bytes_per_sec);
}

double NetworkLoadTerm::Value(const cluster::Machine& machine,
                              const RequestShape& shape, int64_t k) const {
  // Reported use and a request are below the decoder's bound (2^40 bytes/s)
  // and the placed requests below slots times it, k below the slots: about
  // 2^51 at most, far from overflow.
  const int64_t request =
      std::max<int64_t>(0, shape.ask.request.network_bytes_per_sec);
  const int64_t bytes = Load(machine) + k * request;
  return static_cast<double>(std::min(kMaxMiBps, bytes / kMiB));
}

}  // namespace flowsched::flow
