#pragma once

// Bandwidth-aware placement (Firmament's network-aware policy, OSDI 2016,
// section 3.3, figure 6c): what the machine's link carries once the k-th
// new task of the shape is on it, load + k * request, in whole MiB/s. The
// load is the larger of the machine's reported use (MachineUsage) and the
// requests of the tasks placed there, since reports lag placements. So the
// term's weight is the price of each MiB/s, and lightly loaded links win.
//
// A count, like TaskCountTerm: not within [-1, 1]. It stops at
// kMaxMiBps (512 Gbit/s), at which CheckProfile prices a placement, so
// links beyond that all look full.

#include <cstdint>

#include "services/flow/terms/placement_term.h"

namespace flowsched::flow {

class NetworkLoadTerm final : public PlacementTerm {
 public:
  static constexpr int64_t kMaxMiBps = int64_t{1} << 16;
  // The load the term and network_room_by_use profiles read: the larger of
  // reported use and placed requests, bytes per second.
  [[nodiscard]] static int64_t Load(const cluster::Machine& machine);
  [[nodiscard]] bool depends_on_k() const override { return true; }
  [[nodiscard]] double Value(const cluster::Machine& machine,
                             const RequestShape& shape,
                             int64_t k) const override;
};

}  // namespace flowsched::flow
