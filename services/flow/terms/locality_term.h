#pragma once

// Rack locality (Quincy's rack-switch cost, SOSP 2009 section 4.2, at the
// granularity of a shape): the share of the shape's input a machine's rack
// does not hold (RequestShape::input_racks; 1 in a rack holding none of
// it), so its weight is what reading the whole input across a rack switch
// costs. 0 for a shape without input racks. The profile splits shapes by
// their input's first rack only when this term weighs
// (ShapeIndex(by_input_rack)), and then offers each machine's room first
// to the shapes whose input is in its rack.

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
