#pragma once

// GPU-model affinity (AcceleratorRequest.preferred_models, soft): the
// share of the devices the fit rule gives one task of the shape
// (cluster::FitTask, the ones the graph manager books; it takes free
// devices of a preferred model first) that are not of a preferred model.
// So a machine with free preferred devices costs 0, one without any costs
// 1, and a fractional or multi-device ask that must take some of another
// model pays that share. 0 for shapes without an accelerator ask or
// without preferred models, and on machines where the task does not fit
// (the fit rule keeps the shape off them anyway).

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
