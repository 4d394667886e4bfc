#pragma once

// Rack locality (Quincy's rack-switch cost, SOSP 2009 section 4.2, at the
// granularity of a shape): 0 on a machine in the rack that holds most of
// the shape's tasks' input (RequestShape::input_rack), 1 elsewhere, so its
// weight is what reading across a rack switch costs. 0 for a shape without
// an input rack. The profile splits shapes by input rack only when this
// term weighs (ShapeIndex(by_input_rack)), and then offers each machine's
// room first to the shapes whose input is in its rack.

#include <cstdint>

#include "services/flow/terms/placement_term.h"

namespace flowsched::flow {

class LocalityTerm final : public PlacementTerm {
 public:
  [[nodiscard]] bool depends_on_k() const override { return false; }
  [[nodiscard]] double Value(const cluster::Machine& machine,
                             const RequestShape& shape,
                             int64_t k) const override;
};

}  // namespace flowsched::flow
