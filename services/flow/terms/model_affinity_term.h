#pragma once

// GPU-model affinity (AcceleratorRequest.preferred_models, soft): the
// share of the machine's devices the shape's ask accepts that are not of a
// preferred model, so a machine of preferred models only costs 0, one
// without any costs 1, and a mixed machine (where the device fit may pick
// either) in between. 0 for shapes without an accelerator ask or without
// preferred models, and on machines with no acceptable device (the fit
// rule keeps the shape off them anyway).

#include <cstdint>

#include "services/flow/terms/placement_term.h"

namespace flowsched::flow {

class ModelAffinityTerm final : public PlacementTerm {
 public:
  [[nodiscard]] bool depends_on_k() const override { return false; }
  [[nodiscard]] double Value(const cluster::Machine& machine,
                             const RequestShape& shape,
                             int64_t k) const override;
};

}  // namespace flowsched::flow
