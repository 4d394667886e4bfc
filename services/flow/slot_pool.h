#pragma once

// The pool of tasks that ask for no room (Firmament's cluster aggregator X,
// OSDI 2016 figure 6a): such a task fits any free slot, so it needs no
// request-shape class, and one arc X -> M per machine prices its slots:
//
//   X --(convex: the k-th new task costs
//        per_task_cost * (running(m) + k - 1), free slots)--> M
//
// The arc is one piece per slot s = 0 .. slots-1 with the fixed cost
// per_task_cost * s and capacity 1 iff the slot is free (s >= running(m);
// the pieces below are closed with capacity 0). The open pieces are exactly
// the function above, but a task starting or finishing flips one piece's
// capacity instead of repricing every piece, so the incremental solver
// repairs one arc per start or finish (a cost change on a piece with flow
// forces a cancellation and a Dijkstra phase). The solver worker keeps
// closed pieces out of the solver (incremental_mirror.h). Beyond
// kMaxArcSegments slots the last piece takes the remaining free slots at
// its fixed cost per_task_cost * (kMaxArcSegments - 1).

#include <cstdint>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "services/cluster/change_set.h"
#include "services/cluster/cluster_state.h"
#include "services/cluster/cluster_types.h"
#include "services/common/strong_id.h"
#include "services/flow/flow_network.h"

namespace flowsched::flow {

// Sets the arc pool -> node (`machine`'s node) as above; `max_tasks` > 0
// caps the slots counted (a profile's per-machine task limit). Not `open`:
// the same pieces, every one closed (the room pool's arc to a machine it
// does not reach, room_pool.h, and X beside R while no task it is for
// waits or runs, SlotPoolUsers below).
absl::Status SetSlotPoolArc(const cluster::Machine& machine, NodeId pool,
                            NodeId node, int64_t per_task_cost,
                            int64_t max_tasks, FlowNetwork& network,
                            bool open = true);

// The pool's arc when running tasks may be displaced (Firmament's priority
// extension, Gog 2016 section 7.3): the k-th new task in a free slot costs
// per_task_cost * (running + k), one piece each up to kMaxArcSegments (the
// last takes the rest), and one more piece offers the running tasks' slots
// at per_task_cost * slots, which only flow if running tasks leave (the
// machine's arc to the sink bounds the sum). Free-slot pieces are repriced
// at each start and finish. `max_tasks` > 0 caps the free slots offered at
// max_tasks - running, and a machine already running more than max_tasks
// offers no running task's slot either.
absl::Status SetPreemptiblePoolArc(const cluster::Machine& machine, NodeId pool,
                                   NodeId node, int64_t per_task_cost,
                                   int64_t max_tasks, FlowNetwork& network);

// The tasks the slot pool is for, waiting or running: those that ask for
// no room (AsksForRoom is false). Beside the room pool, X's arcs are open
// only while there is one (ProfilePolicy), as R's are while a task R takes
// waits or runs: a workload whose every task asks for room then sends the
// solver none of X's pieces, and a start or finish flips R's piece alone
// instead of X's too. Running ones count so that X does not close and
// reopen on every machine each time the last waiting one starts.
class SlotPoolUsers {
 public:
  // Keeps the set in step with the tasks `changes` names, or with `all`
  // with every task of `state` (a fresh policy's first sync). True when
  // every machine's X arc must be set again: with `all`, or when any()
  // changed.
  bool Track(const cluster::ChangeSet& changes,
             const cluster::ClusterState& state, bool all);
  [[nodiscard]] bool any() const { return !tasks_.empty(); }

 private:
  absl::flat_hash_set<TaskId> tasks_;
};

}  // namespace flowsched::flow
