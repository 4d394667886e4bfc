#pragma once

// A digest of the graph manager's scheduling state: the cluster (jobs,
// tasks, machines, where every task runs) and the flow network (nodes, arcs
// and their pieces). Identical histories give identical digests, in any
// process and on any machine: the hash is a fixed function (no per-process
// seed) over a canonical order (ids ascending, arcs by source then
// destination). Wall-clock fields (submit and start times taken from the
// local clock) are left out, so a replay reaches the same digest. Named
// scalars, devices, accelerator asks and device shares (issue #31) are
// hashed only when present, so a state without them keeps its old digest.
//
// Used to prove recovery exact: the digest of a data directory read after a
// kill equals the one the restarted instance reports.

#include <string>

#include "services/cluster/cluster_state.h"
#include "services/flow/flow_network.h"

namespace flowsched::graph_manager {

// 32 hex digits (128 bits).
std::string StateDigest(const cluster::ClusterState& state,
                        const flow::FlowNetwork& network);

}  // namespace flowsched::graph_manager
