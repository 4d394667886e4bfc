#pragma once

// Load spreading across resources (Firmament's CPU/memory cost model, Gog
// 2016, ch. 7; Kubernetes' LeastAllocated): the larger of the machine's CPU
// and memory utilisation once k tasks of the shape are on it, capped at 1.
// Rising with k, so one round spreads a burst over machines instead of
// filling the emptiest. A dimension the machine does not report counts 0%.

#include <cstdint>

#include "services/flow/terms/placement_term.h"

namespace flowsched::flow {

class SpreadTerm final : public PlacementTerm {
 public:
  [[nodiscard]] bool depends_on_k() const override { return true; }
  [[nodiscard]] double Value(const cluster::Machine& machine,
                             const RequestShape& shape,
                             int64_t k) const override;
};

}  // namespace flowsched::flow
