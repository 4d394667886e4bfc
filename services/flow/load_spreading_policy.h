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
// a piece with flow forces a cancellation and a Dijkstra phase; at 12,500
// machines that made rounds take seconds in tools/bench). The solver
// worker keeps closed pieces out of the solver (incremental_mirror.h).
// Beyond kMaxArcSegments slots the last piece takes the remaining free
// slots at its fixed cost per_task_cost * (kMaxArcSegments - 1).
//   M --(slots)--> S
//   task --(unscheduled_cost)--> U_job --(tasks of job)--> S
//   running task --(0)--> its machine; --(preemption_cost)--> U_job
//
// Running tasks keep a zero-cost arc to their machine and no arc to X, so
// the policy never migrates; leaving a running task unscheduled costs more
// than leaving a waiting one, so it never preempts for nothing.

#include <cstdint>

#include "services/flow/scheduling_policy.h"

namespace flowsched::flow {

struct LoadSpreadingParams {
  int64_t per_task_cost = 10;
  // Must exceed per_task_cost * the largest slot count so that a free slot
  // is always better than waiting.
  int64_t unscheduled_cost = 100'000;
  int64_t preemption_cost = 200'000;
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

 private:
  LoadSpreadingParams params_;
};

}  // namespace flowsched::flow
