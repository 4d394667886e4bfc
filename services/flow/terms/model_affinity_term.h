#pragma once

// GPU-model affinity (AcceleratorRequest.preferred_models, soft): the
// share of the devices the fit rule gives the k-th task of the shape on
// the machine (cluster::FitTask, the ones the graph manager books; it
// takes free devices of a preferred model first) that are not of a
// preferred model. So a machine with free preferred devices costs 0 until
// they are taken, one without any costs 1, and a fractional or
// multi-device ask that must take some of another model pays that share.
// The share never falls as k grows (preferred devices are taken first);
// the k-th is found by booking k - 1 tasks on a copy of the machine's
// room, as the reservations do, so an arc of n tasks (at most 65 pieces)
// costs O(n^2) fits; only such shapes' arcs are split by k.
// 0 for shapes without an accelerator ask or without preferred models (no
// copy then) and where no task fits; beyond the tasks that fit, the last
// share (the reservations never send more there).

#include <cstdint>

#include "services/flow/terms/placement_term.h"

namespace flowsched::flow {

class ModelAffinityTerm final : public PlacementTerm {
 public:
  [[nodiscard]] bool depends_on_k() const override { return true; }
  // Only shapes with an accelerator ask and preferred models.
  [[nodiscard]] bool DependsOnK(const RequestShape& shape) const override;
  [[nodiscard]] double Value(const cluster::Machine& machine,
                             const RequestShape& shape,
                             int64_t k) const override;
};

}  // namespace flowsched::flow
