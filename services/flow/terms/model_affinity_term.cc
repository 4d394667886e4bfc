#include "services/flow/terms/model_affinity_term.h"

#include <algorithm>

#include "services/cluster/resource_fit.h"

namespace flowsched::flow {
namespace {

// The share of `fit`'s devices on `machine` that `ask` does not prefer.
double OtherModelShare(const cluster::Machine& machine,
                       const cluster::AcceleratorRequest& ask,
                       const cluster::Fit& fit) {
  int64_t other = 0;
  for (const cluster::DeviceShare& share : fit.devices) {
    if (!ask.PrefersModel(machine.devices[share.index].model)) ++other;
  }
  return static_cast<double>(other) / static_cast<double>(fit.devices.size());
}

}  // namespace

bool ModelAffinityTerm::DependsOnK(const RequestShape& shape) const {
  const cluster::AcceleratorRequest& ask = shape.ask.accelerator;
  return !ask.empty() && !ask.preferred_models.empty();
}

double ModelAffinityTerm::Value(const cluster::Machine& machine,
                                const RequestShape& shape, int64_t k) const {
  const cluster::AcceleratorRequest& ask = shape.ask.accelerator;
  if (ask.empty() || ask.preferred_models.empty()) return 0;
  if (k <= 1) {
    const cluster::Fit fit = cluster::FitTask(machine, shape.ask);
    return fit.fits() && !fit.devices.empty()
               ? OtherModelShare(machine, ask, fit)
               : 0;
  }
  // What FitTask reads, with slots left to the reservations.
  cluster::Machine room;
  room.capacity = machine.capacity;
  room.allocated = machine.allocated;
  room.task_slots = static_cast<uint32_t>(std::min<int64_t>(k, 1 << 30));
  room.devices = machine.devices;
  double share = 0;
  for (int64_t i = 1; i <= k; ++i) {
    const cluster::Fit fit = cluster::FitTask(room, shape.ask);
    if (!fit.fits() || fit.devices.empty()) break;
    share = std::max(share, OtherModelShare(room, ask, fit));
    if (i < k) cluster::BookTask(room, shape.ask, fit.devices);
  }
  return share;
}

}  // namespace flowsched::flow
