#include "services/core/gang_requirements.h"

#include <algorithm>
#include <limits>

namespace flowsched::core {

std::vector<GangRequirement> GangRequirementsOf(
    const cluster::ClusterState& state, int64_t now_us,
    int64_t hold_after_us) {
  std::vector<GangRequirement> gangs;
  size_t oldest = 0;
  int64_t oldest_wait_start = std::numeric_limits<int64_t>::max();
  for (const auto& [id, job] : state.jobs()) {
    if (!job.gang() || job.tasks.empty()) continue;
    GangRequirement gang{.job = id, .min_members = job.min_members};
    const auto live = static_cast<uint32_t>(job.tasks.size());
    gang.need = std::min(job.min_members, live);
    if (job.running >= gang.need) gang.need = 0;
    if (gang.need > 0) {
      for (TaskId task_id : job.tasks) {
        const cluster::Task* task = state.FindTask(task_id);
        if (task == nullptr || task->running()) continue;
        if (task->wait_start_us < oldest_wait_start) {
          oldest_wait_start = task->wait_start_us;
          oldest = gangs.size();
        }
      }
    }
    gangs.push_back(gang);
  }
  if (hold_after_us > 0 &&
      oldest_wait_start != std::numeric_limits<int64_t>::max() &&
      now_us - oldest_wait_start >= hold_after_us) {
    gangs[oldest].hold = true;
  }
  return gangs;
}

}  // namespace flowsched::core
