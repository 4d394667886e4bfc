#include "services/core/gang_requirements.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "services/cluster/resource_fit.h"

namespace flowsched::core {
namespace {

// `machine` with nothing placed on it.
cluster::Machine Emptied(const cluster::Machine& machine) {
  cluster::Machine empty = machine;
  empty.running.clear();
  empty.allocated = {};
  for (cluster::Device& device : empty.devices) {
    device.used_milli = 0;
    device.used_memory_bytes = 0;
    device.tasks.clear();
  }
  return empty;
}

// Whether `count` of the job's waiting tasks fit the machines with nothing
// else on them (first fit by the one fit rule, FitTask). Emptied copies are
// made only of the machines tried: O(count * machines tried).
bool FitsEmptyCluster(const cluster::ClusterState& state,
                      const cluster::Job& job, uint32_t count) {
  std::map<MachineId, cluster::Machine> emptied;
  uint32_t placed = 0;
  for (TaskId task_id : job.tasks) {
    if (placed == count) break;
    const cluster::Task* task = state.FindTask(task_id);
    if (task == nullptr || task->running()) continue;
    bool fitted = false;
    for (const auto& [id, machine] : state.machines()) {
      auto it = emptied.find(id);
      if (it == emptied.end()) it = emptied.emplace(id, Emptied(machine)).first;
      const cluster::Fit fit = cluster::FitTask(it->second, task->spec);
      if (!fit.fits()) continue;
      cluster::BookTask(it->second, task->spec, fit.devices);
      it->second.running.insert(task_id);
      fitted = true;
      break;
    }
    if (!fitted) return false;
    ++placed;
  }
  return placed == count;
}

}  // namespace

std::vector<GangRequirement> GangRequirementsOf(
    const cluster::ClusterState& state, int64_t now_us, int64_t hold_after_us) {
  std::vector<GangRequirement> gangs;
  // (oldest wait start, job id, index) of gangs that waited past the age.
  std::vector<std::tuple<int64_t, JobId, size_t>> aged;
  for (JobId id : state.gang_jobs()) {
    const cluster::Job& job = *state.FindJob(id);
    if (job.tasks.empty()) continue;
    GangRequirement gang{.job = id, .min_members = job.min_members};
    gang.need = job.gang_need();
    if (job.running >= gang.need) gang.need = 0;
    if (gang.need > 0 && hold_after_us > 0) {
      int64_t oldest = now_us;
      for (TaskId task_id : job.tasks) {
        const cluster::Task* task = state.FindTask(task_id);
        if (task != nullptr && !task->running()) {
          oldest = std::min(oldest, task->wait_start_us);
        }
      }
      if (now_us - oldest >= hold_after_us) {
        aged.emplace_back(oldest, id, gangs.size());
      }
    }
    gangs.push_back(gang);
  }
  // The longest waiting gang that could fit at all holds; one that could
  // not even on empty machines would only idle the cluster.
  std::sort(aged.begin(), aged.end());
  for (const auto& [oldest, id, index] : aged) {
    const cluster::Job& job = *state.FindJob(id);
    if (FitsEmptyCluster(state, job, gangs[index].need - job.running)) {
      gangs[index].hold = true;
      break;
    }
  }
  return gangs;
}

}  // namespace flowsched::core
