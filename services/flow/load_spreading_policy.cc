#include "services/flow/load_spreading_policy.h"

namespace flowsched::flow {

ProfileParams LoadSpreadingProfile(const LoadSpreadingParams& params) {
  ProfileParams profile;
  profile.spread = 0;
  profile.pack = 0;
  profile.preferred_labels = 0;
  profile.model_affinity = 0;
  profile.locality = 0;
  profile.tasks = params.per_task_cost;
  profile.unscheduled_cost = params.unscheduled_cost;
  profile.priority_step = 0;
  profile.preemption_cost = params.preemption_cost;
  profile.max_tasks_per_machine = 0;
  profile.shape_machines_per_task = params.shape_machines_per_task;
  profile.min_shape_machines = params.min_shape_machines;
  profile.pool_slot_tasks = true;
  profile.room_pool = true;
  profile.gang_first_after_s = params.gang_first_after_s;
  return profile;
}

}  // namespace flowsched::flow
