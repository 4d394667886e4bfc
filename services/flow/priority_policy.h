#pragma once

// Priorities with preemption (Firmament's priority extension of the load
// spreading policy, Gog PhD thesis 2016, section 7.3; Borg-style
// preemption: a task may displace only tasks of lower priority). A
// built-in profile (profile_policy.h): load-spreading's tasks term and
// pool, with waiting priced by priority and the pool preemptive:
//
//   waiting task --(0)--> X --(convex, task_slots)--> M --(slots)--> S
//   waiting task --(wait_cost(p))--> U_job --(tasks of job)--> S
//   running task --(0)--> its machine
//   running task --(wait_cost(p) + preemption_penalty)--> U_job
//   running task asking for a slot only --(migration_cost)--> X
//
// X -> M: the k-th new task on a machine costs per_task_cost * (running +
// k) while free slots last; the units beyond (which only flow if running
// tasks leave M) cost per_task_cost * slots (slot_pool.h).
//
// wait_cost(p) = unscheduled_cost + priority_step * p grows with priority
// p (the larger of the task's and its job's, clamped to [0,
// max_priority]). Preempting a task of priority q so that a waiting task
// of priority p takes its slot changes the cost by wait_cost(q) + penalty
// + placement - wait_cost(p), which is negative only if priority_step *
// (p - q) > preemption_penalty + placement. So a task is displaced only by
// strictly higher-priority demand (with the defaults, any higher
// priority on machines of up to 500 slots), and with no such demand every
// running task keeps its machine: staying costs 0, leaving costs a positive
// penalty (stability).
//
// Tasks that ask for resources, devices or labels go through their request
// shape's capped class (as under load-spreading), so they are placed only
// where they fit; they wait by priority too, but take free room only: on
// a full cluster they wait for room to free, even while lower-priority
// slot-only tasks displace others. Running ones may be preempted (not
// migrated) for higher-priority slot-only tasks.
// PriorityPolicy(params) is exactly ProfilePolicy(PriorityProfile(params))
// named "priority"; priority_policy_test.cc pins the network it built on
// the slot model before it was a profile.

#include <cstdint>

#include "services/flow/profile_policy.h"

namespace flowsched::flow {

struct PriorityParams {
  int64_t per_task_cost = 10;  // load spreading within a priority
  int64_t unscheduled_cost = 100'000;
  int64_t priority_step = 10'000;
  // Above 0 so that equal priorities never displace each other, and below
  // priority_step - per_task_cost * slots so that one level of priority is
  // enough to displace.
  int64_t preemption_penalty = 5'000;
  // Moving a running task (to make room for a higher-priority task where
  // it ran) costs this on top of the placement.
  int64_t migration_cost = 20'000;
  int32_t max_priority = 1000;
  // Seconds a gang member waits before its shape gets first offer of
  // every machine's room (0: never; profile_policy.h says why).
  double gang_first_after_s = 60;
};

// The profile priority is.
ProfileParams PriorityProfile(const PriorityParams& params);

class PriorityPolicy final : public ProfilePolicy {
 public:
  explicit PriorityPolicy(PriorityParams params = {})
      : ProfilePolicy(PriorityProfile(params), "priority") {}
};

}  // namespace flowsched::flow
