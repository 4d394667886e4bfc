#pragma once

// CPU, memory and accelerator amounts as one vector, the dimensions the FGD
// paper's node scores (BestFit, DotProd, Clustering) and the flow policies'
// packing terms read.

#include "services/cluster/cluster_state.h"
#include "services/cluster/cluster_types.h"

namespace flowsched::cluster {

// Amounts per dimension: CPU millicores, memory bytes, device milli.
struct ResourceVector {
  double cpu_millis = 0, memory_bytes = 0, device_milli = 0;
};

// Largest capacity of any machine per dimension (the "max spec" the
// paper's scores normalise by); at least 1 each so they divide safely.
[[nodiscard]] ResourceVector ComputeMaxSpec(const ClusterState& state);

// Free capacity of a machine: CPU and memory (unreported: 0), and the free
// milli of all its devices.
[[nodiscard]] ResourceVector ComputeFree(const Machine& machine);

// A task's request: CPU, memory, and device milli (whole devices x 1000,
// or its fraction).
[[nodiscard]] ResourceVector RequestVector(const TaskSpec& task);

// `v` with each dimension divided by `max_spec`'s.
[[nodiscard]] ResourceVector Normalised(const ResourceVector& v,
                                        const ResourceVector& max_spec);

// The paper's BestFit measure: what `machine` would have left of each
// dimension after `task`, normalised by `max_spec`, summed (0 for a
// machine the task fills exactly; at most 3; never negative where the task
// fits). CPU or memory the machine does not report counts 0.
[[nodiscard]] double BestFitLeftover(const Machine& machine,
                                     const TaskSpec& task,
                                     const ResourceVector& max_spec);

}  // namespace flowsched::cluster
