#pragma once

// Helpers shared by the baseline schedulers.

#include <cstdint>
#include <map>
#include <string>

#include "services/cluster/cluster_state.h"
#include "services/cluster/cluster_types.h"
#include "services/cluster/input_locality.h"

namespace flowsched::baselines {

// Where a task's input lives (cluster::LocateInput, as the policies and the
// simulator's metrics read it). Rack bytes include the bytes of machines in
// that rack, so a rack preference survives the preferred machine filling
// up; data on a machine the state no longer knows is remote.
cluster::InputLocation ComputeLocality(const cluster::Task& task,
                                       const cluster::ClusterState& state);

// Whether `task` could be placed on `machine` now: a free slot and
// Machine::Fits, i.e. exactly what ClusterState::Place checks.
[[nodiscard]] inline bool CanPlace(const cluster::Machine& machine,
                                   const cluster::Task& task) {
  return machine.free_slots() > 0 && machine.Fits(task.spec.request);
}

// Books `task` on a scratch copy of a machine so later decisions in the same
// round see the slot and resources as taken.
void Reserve(cluster::Machine& machine, const cluster::Task& task);

}  // namespace flowsched::baselines
