#pragma once

// Load spreading by task count (Firmament's load-spreading policy, OSDI
// 2016, figure 6a): the tasks on the machine before the k-th new one,
// running + k - 1, so the term's weight is the price of each task a
// machine already has. Rising with k, so one round spreads a burst.
//
// A count, not within [-1, 1] (as NetworkLoadTerm is): below the
// machine's slots, which the event decoder bounds
// (ValidationLimits::max_task_slots). CheckProfile prices a placement at
// the default bound (1,000 slots); a deployment that raises it should
// raise unscheduled_cost with it (the profile clamps costs at the
// solver's bound, but waiting must stay dearer).

#include <cstdint>

#include "services/flow/terms/placement_term.h"

namespace flowsched::flow {

class TaskCountTerm final : public PlacementTerm {
 public:
  [[nodiscard]] bool depends_on_k() const override { return true; }
  [[nodiscard]] double Value(const cluster::Machine& machine,
                             const RequestShape& shape,
                             int64_t k) const override;
};

}  // namespace flowsched::flow
