#pragma once

// A scheduling policy (cost model) turns changes of the cluster state into
// changes of the flow network: which nodes and arcs exist and what they
// cost. One policy per file; the graph manager picks one by name.
//
// Contract: after Sync, every task in the state has a node with supply 1
// and a path to the sink through its job's unscheduled aggregator, the sink
// drains every unit, and no arc lets a machine take more tasks than it has
// slots.

#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/cluster/change_set.h"
#include "services/cluster/cluster_state.h"
#include "services/flow/network_builder.h"

namespace flowsched::flow {

class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;

  // Re-derives the parts of the network that `changes` touched.
  // Entities named in `changes` that are gone from `state` are removed.
  // Returns Internal if the network rejects an edit (a policy bug).
  virtual absl::Status Sync(const cluster::ChangeSet& changes,
                            const cluster::ClusterState& state,
                            NetworkBuilder& builder) = 0;
};

// Creates a policy by name ("load-spreading"). InvalidArgument lists the
// known names when `name` is not one of them.
absl::StatusOr<std::unique_ptr<SchedulingPolicy>> MakePolicy(
    std::string_view name);

}  // namespace flowsched::flow
