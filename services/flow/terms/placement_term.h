#pragma once

// A cost term of a scheduling profile (profile_policy.h): what placing the
// k-th task of a request shape on a machine in one round costs, as a value
// the profile multiplies by the term's weight (cost units at value 1) and
// rounds. A profile's price for a placement is the sum of its weighted
// terms; feasibility is not a term's business (the profile's filters and
// the room reservations of request_shapes.h decide where arcs exist).
//
// Contract, which keeps the class arcs convex and the costs bounded:
//   - Value is within [-1, 1] and non-decreasing in k (k >= 1); the two
//     counts are the exceptions, each with a bound CheckProfile prices:
//     TaskCountTerm (below the default slot limit) and NetworkLoadTerm
//     (MiB/s, at most its kMaxMiBps);
//   - depends_on_k() is false only if Value ignores k, and DependsOnK(shape)
//     only if it does for that shape, so an arc priced by such terms alone
//     is one piece;
//   - Prepare runs before every reservation pass (and every sync of a
//     gated profile), with the state the pass reads, and Value reads
//     nothing else of the cluster than the machine and what Prepare kept;
//     Prepare returns whether what it keeps changed since its last call
//     (a value on a machine that did not change may then have moved, so
//     prices kept from before are stale).

#include <cstdint>

#include "services/cluster/cluster_state.h"
#include "services/cluster/cluster_types.h"
#include "services/flow/request_shapes.h"

namespace flowsched::flow {

class PlacementTerm {
 public:
  virtual ~PlacementTerm() = default;
  [[nodiscard]] virtual bool depends_on_k() const = 0;
  // Whether Value moves with k for `shape` (a term may ignore k for most
  // shapes); false only if it does not. An arc whose shape no term prices
  // by k is one piece.
  [[nodiscard]] virtual bool DependsOnK(const RequestShape& shape) const {
    (void)shape;
    return depends_on_k();
  }
  // Cluster-wide inputs (normalisers), once per reservation pass; whether
  // they changed.
  virtual bool Prepare(const cluster::ClusterState& state) {
    (void)state;
    return false;
  }
  [[nodiscard]] virtual double Value(const cluster::Machine& machine,
                                     const RequestShape& shape,
                                     int64_t k) const = 0;
};

}  // namespace flowsched::flow
