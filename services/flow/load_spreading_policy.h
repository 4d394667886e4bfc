#pragma once

// Firmament's load-spreading policy (OSDI 2016, section 3.3, figure 6a):
// every waiting task has an arc to the cluster aggregator X, and the arc
// from X to each machine costs in proportion to the tasks already running
// there, so a machine only takes more tasks once the others have as many.
// Firmament's single arc per machine spreads only across rounds; here the
// arc is convex (one piece per further task), so a burst submitted in one
// round spreads too.
//
//   task --(0)--> X --(convex: k-th new task costs
//                       per_task_cost * (running(m) + k), free slots)--> M
//
// The convex X->M arc is one piece per slot s = 0 .. slots-1 with the
// fixed cost per_task_cost * s and capacity 1 iff the slot is free
// (s >= running(m); the pieces below are closed with capacity 0). The open
// pieces are exactly the function above, but a task starting or finishing
// flips one piece's capacity instead of repricing every piece, so the
// incremental solver repairs one arc per start or finish (a cost change on
// a piece with flow forces a cancellation and a Dijkstra phase). The solver
// worker keeps closed pieces out of the solver (incremental_mirror.h).
// Beyond kMaxArcSegments slots the last piece takes the remaining free
// slots at its fixed cost per_task_cost * (kMaxArcSegments - 1).
//   M --(slots)--> S
//   task --(unscheduled_cost)--> U_job --(tasks of job)--> S
//   running task --(0)--> its machine; --(preemption_cost)--> U_job
//
// Tasks that ask for resources (CPU, memory, network, named scalars),
// accelerator devices or required labels would not fit every free slot:
// a waiting one reaches machines through its request shape's class EC_s
// instead of X (request_shapes.h). Each machine's free room is reserved
// among the shapes, and EC_s -> M carries the reservation as capacity, its
// pieces priced like X's free-slot pieces, so every placement fits:
//   task --(0)--> EC_s --(convex, reserved count)--> M
// EC_s has arcs to its cheapest machines only (LoadSpreadingParams:
// machines are visited least loaded first, each shape reserving until it
// has its share), so a new shape is a delta of tens of arcs, not one per
// machine, and the visit ends once every shape has its share (a shape
// that fits few machines keeps it going over every machine with a free
// slot). With SyncContext::refresh_follows (the graph manager, which syncs
// each batch of events), the class arcs wait for the Refresh before the
// next round. Tasks that ask for nothing (the slot model) keep the network
// above.
//
// Running tasks keep a zero-cost arc to their machine and no arc to X, so
// the policy never migrates; leaving a running task unscheduled costs more
// than leaving a waiting one, so it never preempts for nothing.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "services/flow/request_shapes.h"
#include "services/flow/scheduling_policy.h"

namespace flowsched::flow {

struct LoadSpreadingParams {
  int64_t per_task_cost = 10;
  // Must exceed per_task_cost * the largest slot count so that a free slot
  // is always better than waiting.
  int64_t unscheduled_cost = 100'000;
  int64_t preemption_cost = 200'000;
  // A request shape's class gets arcs to its cheapest machines with room
  // only: max(min_shape_machines, shape_machines_per_task * waiting tasks).
  int64_t min_shape_machines = 16;
  int64_t shape_machines_per_task = 4;
  // Seconds a gang member waits before its shape gets first offer of
  // every machine's room (0: never; profile_policy.h says why).
  double gang_first_after_s = 60;
};

class LoadSpreadingPolicy final : public SchedulingPolicy {
 public:
  explicit LoadSpreadingPolicy(LoadSpreadingParams params = {})
      : params_(params) {}
  [[nodiscard]] std::string_view name() const override {
    return "load-spreading";
  }
  using SchedulingPolicy::Sync;
  absl::Status Sync(const cluster::ChangeSet& changes,
                    const cluster::ClusterState& state,
                    const SyncContext& context,
                    NetworkBuilder& builder) override;
  [[nodiscard]] bool time_dependent() const override {
    return params_.gang_first_after_s > 0;
  }
  [[nodiscard]] bool refresh_owed() const override {
    return reservations_owed_ || !waiting_for_room_.tracking();
  }
  // Redoes the class arcs when a Sync left them to it or the set of shapes
  // offered first changed.
  absl::Status Refresh(const cluster::ClusterState& state,
                       const SyncContext& context,
                       NetworkBuilder& builder) override;

 private:
  // Class -> machine arcs: each machine's reservation per shape (waiting
  // gangs' first, StarvingFirst), priced like X's free-slot pieces; classes
  // without waiting tasks go.
  absl::Status SyncShapeArcs(const cluster::ClusterState& state,
                             const std::vector<RequestShape>& shapes,
                             const std::map<std::string, NodeId>& class_nodes,
                             int64_t now_us, NetworkBuilder& builder);

  LoadSpreadingParams params_;
  // Waiting tasks that AsksForRoom by shape, so a round's shapes cost what
  // changed, not a walk over every task.
  ShapeIndex waiting_for_room_;
  // Keys of the shapes the last reservation offered first.
  std::vector<std::string> starving_;
  // A Sync with refresh_follows left the class arcs to Refresh.
  bool reservations_owed_ = false;
};

}  // namespace flowsched::flow
