#pragma once

// Gated admission (gpu-fgd's network, a profile's `gate`): one new task per
// machine per round, so every price can be exact for the machine as it is.
//
//   EC_s --(price of one task of s on m, cap 1)--> G_m --(1)--> M
//
// G_m, one gate per machine with a free slot where some waiting shape
// fits, admits one task; a shape has an arc to G_m only where one of its
// tasks fits by ReserveMachine's rule (slots, labels, the different-
// machines rule, every resource and device, `limits`), and cluster::FitTask
// gives it devices. So any flow fits, and a burst larger than the machines
// with room takes several rounds.
//
// Prices are kept between syncs: a machine's prices change only when it
// does, unless the price's cluster-wide inputs moved (the caller says so:
// PlacementTerm::Prepare) or the shape's ask did (a different-machines
// job's shape covers its waiting tasks, which change under one key), so a
// sync prices the changed machines for every waiting shape, and a new or
// changed shape on every machine.

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "services/cluster/change_set.h"
#include "services/cluster/cluster_state.h"
#include "services/flow/network_builder.h"
#include "services/flow/request_shapes.h"

namespace flowsched::flow {

class MachineGates {
 public:
  // The cost of one task of a shape on a machine where it fits.
  using Price =
      std::function<int64_t(const cluster::Machine&, const RequestShape&)>;

  // Brings the kept prices in step with `changes` (every price again when
  // `reprice_all`; shapes no longer waiting are dropped), then gives each
  // class of `classes` exactly its arcs to the gates, each gate its arc to
  // its machine, and removes the gates no shape reaches.
  absl::Status Sync(const cluster::ChangeSet& changes,
                    const cluster::ClusterState& state,
                    const ShapeClasses& classes, RoomLimits limits,
                    bool reprice_all, const Price& price,
                    NetworkBuilder& builder);

 private:
  // Adds `machine`'s price for `shape` to `fitting` if one task fits.
  static void PriceOn(const cluster::Machine& machine,
                      const cluster::ClusterState& state,
                      const RequestShape& shape, RoomLimits limits,
                      const Price& price,
                      std::map<MachineId, int64_t>& fitting);

  struct KeptShape {
    RequestShape shape;  // as priced (what a price reads of it)
    std::map<MachineId, int64_t> prices;  // where one of its tasks fits
  };
  // Whether a price of `a` is one of `b`: what the fit rule and the terms
  // read of a shape is the same.
  static bool SamePricing(const RequestShape& a, const RequestShape& b);

  // Shape key -> the shape as priced and its prices.
  absl::flat_hash_map<std::string, KeptShape> kept_;
};

}  // namespace flowsched::flow
