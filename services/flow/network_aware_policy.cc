#include "services/flow/network_aware_policy.h"

namespace flowsched::flow {

ProfileParams NetworkAwareProfile(const NetworkAwareParams& params) {
  // Every other weight and filter stays at the profile's default, off.
  ProfileParams profile;
  profile.spread = 0;
  profile.preferred_labels = 0;
  profile.network = 1;
  profile.network_room_by_use = true;
  profile.unscheduled_cost = params.unscheduled_cost;
  profile.preemption_cost = params.preemption_cost;
  profile.gang_first_after_s = params.gang_first_after_s;
  return profile;
}

}  // namespace flowsched::flow
