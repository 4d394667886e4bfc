#pragma once

// Helpers shared by the baseline schedulers.

#include <cstdint>
#include <map>
#include <string>

#include "services/cluster/cluster_state.h"
#include "services/cluster/cluster_types.h"
#include "services/cluster/input_locality.h"
#include "services/cluster/resource_fit.h"

namespace flowsched::baselines {

// Where a task's input lives (cluster::LocateInput, as the policies and the
// simulator's metrics read it). Rack bytes include the bytes of machines in
// that rack, so a rack preference survives the preferred machine filling
// up; data on a machine the state no longer knows is remote.
cluster::InputLocation ComputeLocality(const cluster::Task& task,
                                       const cluster::ClusterState& state);

// Whether `task` could be placed on `machine` now: cluster::FitTask (slots,
// resources, devices), i.e. exactly what ClusterState::Place checks.
[[nodiscard]] inline bool CanPlace(const cluster::Machine& machine,
                                   const cluster::Task& task) {
  return cluster::FitTask(machine, task.spec).fits();
}

// Books `task` on a scratch copy of a machine so later decisions in the same
// round see the slot, resources and devices (those FitTask picks) as taken.
// REQUIRES: CanPlace(machine, task).
void Reserve(cluster::Machine& machine, const cluster::Task& task);

}  // namespace flowsched::baselines
