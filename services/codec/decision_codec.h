#pragma once

// core::Decision <-> v1::PlacementDecision: the decision fields only; the
// round, epochs and idempotency key are the publisher's to set.

#include "flowsched/v1/placements.pb.h"
#include "services/core/decision.h"

namespace flowsched::codec {

void EncodeDecision(const core::Decision& decision, v1::PlacementDecision& out);
// An action this build does not know decodes as kUnspecified (applying it
// leaves it stale with a reason).
core::Decision DecodeDecision(const v1::PlacementDecision& message);

}  // namespace flowsched::codec
