#include "services/flow/priority_policy.h"

#include "services/flow/load_spreading_policy.h"

namespace flowsched::flow {

ProfileParams PriorityProfile(const PriorityParams& params) {
  ProfileParams profile =
      LoadSpreadingProfile({.per_task_cost = params.per_task_cost,
                            .unscheduled_cost = params.unscheduled_cost,
                            .preemption_cost = params.preemption_penalty,
                            .gang_first_after_s = params.gang_first_after_s});
  profile.priority_step = params.priority_step;
  profile.max_priority = params.max_priority;
  profile.preemptive = true;
  profile.room_pool = false;  // R serves free room only (room_pool.h)
  profile.migration_cost = params.migration_cost;
  return profile;
}

}  // namespace flowsched::flow
