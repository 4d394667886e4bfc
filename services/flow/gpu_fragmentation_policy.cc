#include "services/flow/gpu_fragmentation_policy.h"

#include <cmath>

#include "services/cluster/cluster_types.h"
#include "services/flow/terms/fragmentation_term.h"
#include "services/flow/terms/machine_order_term.h"

namespace flowsched::flow {

ProfileParams GpuFragmentationProfile(const GpuFragmentationParams& params) {
  // Cost units per score level, or per whole GPU of delta F.
  const bool scored = params.score_levels > 0;
  const double unit = scored ? static_cast<double>(MachineOrderTerm::kSteps)
                             : static_cast<double>(cluster::kMilliPerDevice);
  ProfileParams profile;
  profile.spread = 0;
  profile.preferred_labels = 0;
  profile.fragmentation =
      scored ? params.score_levels * MachineOrderTerm::kSteps
             : static_cast<int64_t>(FragmentationTerm::kMaxDeltaMilli);
  profile.fragmentation_levels = params.score_levels;
  profile.workload_coverage = params.workload_coverage;
  // The pack term averages BestFit's three dimensions.
  profile.pack = std::llround(3 * params.best_fit * unit);
  profile.model_affinity = std::llround(params.model_affinity * unit);
  profile.first_fit =
      scored && params.first_fit != 0 ? MachineOrderTerm::kSteps : 0;
  profile.unscheduled_cost = params.unscheduled_cost;
  profile.preemption_cost = params.preemption_cost;
  profile.gang_first_after_s = 0;
  profile.gate = true;
  return profile;
}

}  // namespace flowsched::flow
