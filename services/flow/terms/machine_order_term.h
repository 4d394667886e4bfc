#pragma once

// First fit: the machine's position in id order, in steps of
// 1/kSteps of the cluster ([0, 1)), so that among equal prices the
// earliest machine wins (the FGD authors' simulator breaks ties so; with a
// weight below the other terms' smallest step it only orders ties).
// Prepare numbers the machines, and says when a position moved (a machine
// came or went), since every machine's value then may.

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "services/cluster/cluster_types.h"
#include "services/flow/terms/placement_term.h"

namespace flowsched::flow {

class MachineOrderTerm final : public PlacementTerm {
 public:
  static constexpr int64_t kSteps = 10'000;

  [[nodiscard]] bool depends_on_k() const override { return false; }
  bool Prepare(const cluster::ClusterState& state) override;
  [[nodiscard]] double Value(const cluster::Machine& machine,
                             const RequestShape& shape,
                             int64_t k) const override;

 private:
  std::vector<MachineId> order_;  // the machines Prepare saw, id order
  absl::flat_hash_map<MachineId, int64_t> step_;
};

}  // namespace flowsched::flow
