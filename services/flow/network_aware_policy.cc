#include "services/flow/network_aware_policy.h"

namespace flowsched::flow {

ProfileParams NetworkAwareProfile(const NetworkAwareParams& params) {
  ProfileParams profile;
  profile.spread = 0;
  profile.pack = 0;
  profile.preferred_labels = 0;
  profile.model_affinity = 0;
  profile.locality = 0;
  profile.tasks = 0;
  profile.network = 1;
  profile.unscheduled_cost = params.unscheduled_cost;
  profile.priority_step = 0;
  profile.preemption_cost = params.preemption_cost;
  profile.max_tasks_per_machine = 0;
  profile.network_room_by_use = true;
  profile.shape_machines_per_task = 0;
  profile.pool_slot_tasks = false;
  profile.gang_first_after_s = params.gang_first_after_s;
  return profile;
}

}  // namespace flowsched::flow
