#pragma once

// Firmament's load-spreading policy (OSDI 2016, section 3.3, figure 6a),
// the default: a machine only takes more tasks once the others have as
// many. A built-in profile (profile_policy.h) of one cost term, tasks
// (weight per_task_cost: the k-th new task on a machine costs
// per_task_cost * (running + k - 1)), with the pool and a cap:
//
//   task asking for no room --(0)--> X --(convex, free slots)--> M
//   task asking for room --(0)--> EC_s --(convex, reserved count)--> M
//   EC_s of CPU, memory or network only --(0)--> R --(convex, free slots
//                      where the largest such ask fits each of them)--> M
//   M --(slots)--> S
//   waiting task --(unscheduled_cost)--> U_job --(tasks of job)--> S
//   running task --(0)--> its machine; --(preemption_cost)--> U_job
//
// Tasks that ask for nothing (the slot model) wait in the pool X, one
// piece per slot (slot_pool.h); Firmament's single arc per machine
// spreads only across rounds, the convex arc spreads a burst submitted in
// one round too. Tasks that ask for resources, devices or required labels
// (or belong to a different-machines job) go through their request
// shape's class (request_shapes.h) to the machines that reserved room for
// them: each shape on its share of the least loaded machines only,
// max(min_shape_machines, shape_machines_per_task * its waiting tasks), so
// a new shape is a delta of tens of arcs, not one per machine. Shapes that
// ask for CPU, memory or network only also reach, through the room pool R
// (room_pool.h), every machine whose free room fits the largest such ask
// in each free slot; the reservations keep the other machines' room. So a
// burst of many shapes is placed in one round, and R's convex arc spreads
// it by the machine's count of new tasks across shapes, as X does.
//
// Running tasks keep a zero-cost arc to their machine and no arc to X, so
// the policy never migrates; leaving a running task unscheduled costs more
// than leaving a waiting one, so it never preempts for nothing.
//
// LoadSpreadingPolicy(params) is exactly ProfilePolicy(LoadSpreading-
// Profile(params)) named "load-spreading"; load_spreading_policy_test.cc
// pins the network it built before it was a profile. Two differences from
// that class: a class arc carrying more than 64 tasks of one shape to one
// machine in one round has its last piece at the 65th task, not the 64th
// (every profile's), and per_task_cost = 0 makes class arcs one piece.

#include <cstdint>

#include "services/flow/profile_policy.h"

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

// The profile load-spreading is.
ProfileParams LoadSpreadingProfile(const LoadSpreadingParams& params);

class LoadSpreadingPolicy final : public ProfilePolicy {
 public:
  explicit LoadSpreadingPolicy(LoadSpreadingParams params = {})
      : ProfilePolicy(LoadSpreadingProfile(params), "load-spreading") {}
};

}  // namespace flowsched::flow
