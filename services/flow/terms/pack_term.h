#pragma once

// Packing (Kubernetes' MostAllocated; the FGD paper's BestFit): what the
// machine would keep free after one task of the shape, CPU, memory and
// device milli each over the largest machine's (cluster::BestFitLeftover),
// averaged over the three and clamped to [-1, 1]: 0 for a machine the task
// fills exactly, most for an empty machine of the largest kind, below 0
// where the task counts for more than the machine has free (whole devices
// count a whole unit each, also on devices of less capacity). Fuller
// machines cost less, so work collects on few machines and whole machines
// stay free for large asks. A dimension the machine does not report leaves
// nothing (as in BestFitLeftover), so such machines look full in it.
//
// The price does not rise with k (a falling price would not be convex), so
// a round places a shape's tasks on the fullest machines up to their
// reserved room, and the next round prices the fill it left.

#include <cstdint>

#include "services/cluster/resource_vector.h"
#include "services/flow/terms/placement_term.h"

namespace flowsched::flow {

class PackTerm final : public PlacementTerm {
 public:
  [[nodiscard]] bool depends_on_k() const override { return false; }
  bool Prepare(const cluster::ClusterState& state) override;
  [[nodiscard]] double Value(const cluster::Machine& machine,
                             const RequestShape& shape,
                             int64_t k) const override;

 private:
  cluster::ResourceVector max_spec_{1, 1, 1};
};

}  // namespace flowsched::flow
