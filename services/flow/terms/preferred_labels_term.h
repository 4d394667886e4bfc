#pragma once

// Soft node affinity (TaskSpec.preferred_labels, Kubernetes'
// preferredDuringScheduling): -1 on a machine whose labels match every
// preferred label of the shape, else 0, so its weight is the discount a
// matching machine gets. Shapes whose tasks prefer different labels have
// none (RequestShape::preferred is empty) and get no discount.

#include <cstdint>

#include "services/flow/terms/placement_term.h"

namespace flowsched::flow {

class PreferredLabelsTerm final : public PlacementTerm {
 public:
  [[nodiscard]] bool depends_on_k() const override { return false; }
  [[nodiscard]] double Value(const cluster::Machine& machine,
                             const RequestShape& shape,
                             int64_t k) const override;
};

}  // namespace flowsched::flow
