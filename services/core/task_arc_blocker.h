#pragma once

// Withdraws waiting tasks from every machine for the rest of one round:
// capacity 0 on each arc leaving the task node except the one to its job's
// unscheduled aggregator, so the only way for its unit of flow is to wait.
// Every arc it changes is remembered as it was, and Restore sets it back
// exactly (same capacity, cost and pieces; the arc keeps its slot), so the
// network afterwards equals the one before Block and the graph manager's
// next delta applies to it as if nothing had happened.
//
// Thread-safety: none.

#include <functional>
#include <set>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "services/flow/flow_network.h"
#include "services/flow/graph_change.h"

namespace flowsched::core {

class TaskArcBlocker {
 public:
  // Sends one change to the network (and whatever mirrors it).
  using ApplyFn = std::function<absl::Status(const flow::GraphChange&)>;

  // Blocks the task nodes of `tasks` that wait (running_on 0) and are not
  // blocked yet; a running task keeps its arcs. `network` is the network
  // `apply` changes. O(arcs of the tasks). An error leaves the network
  // partly blocked: Restore still undoes what was applied.
  absl::Status Block(const flow::FlowNetwork& network,
                     std::span<const flow::NodeId> tasks, const ApplyFn& apply);
  // Sets every blocked arc back, newest first; forgets them all.
  absl::Status Restore(const ApplyFn& apply);
  [[nodiscard]] bool empty() const { return saved_.empty(); }

 private:
  std::vector<flow::GraphChange> saved_;  // the arcs as they were
  std::set<flow::NodeId> blocked_;
};

}  // namespace flowsched::core
