#include "services/baselines/gpu_clustering_scheduler.h"

#include <algorithm>

#include "services/cluster/gpu_fragmentation.h"

namespace flowsched::baselines {
namespace {

// The simulator's affinity tags: "share-gpu" for any fraction, "<n>-gpu"
// for n whole devices.
std::pair<uint32_t, bool> AffinityOf(const cluster::AcceleratorRequest& ask) {
  return {ask.whole, ask.milli > 0};
}

}  // namespace

void GpuClusteringScheduler::BeginRound(const cluster::ClusterState& state) {
  state_ = &state;
  max_device_milli_ =
      static_cast<int64_t>(cluster::ComputeMaxSpec(state).device_milli);
}

const std::vector<GpuClusteringScheduler::Affinity>&
GpuClusteringScheduler::AffinitiesOf(const cluster::Machine& machine) {
  MachineAffinities& cached = cache_[machine.id];
  if (std::equal(cached.running.begin(), cached.running.end(),
                 machine.running.begin(), machine.running.end())) {
    return cached.distinct;
  }
  cached.running.assign(machine.running.begin(), machine.running.end());
  cached.distinct.clear();
  for (TaskId id : machine.running) {
    const cluster::Task* task = state_->FindTask(id);
    if (task == nullptr || task->spec.accelerator.empty()) continue;
    cached.distinct.push_back(AffinityOf(task->spec.accelerator));
  }
  std::sort(cached.distinct.begin(), cached.distinct.end());
  cached.distinct.erase(
      std::unique(cached.distinct.begin(), cached.distinct.end()),
      cached.distinct.end());
  return cached.distinct;
}

std::optional<NodeChoice> GpuClusteringScheduler::Evaluate(
    const cluster::Machine& machine, const cluster::Task& task,
    const cluster::Fit&) {
  const cluster::AcceleratorRequest& ask = task.spec.accelerator;
  if (ask.empty()) return NodeChoice{.cost = 0};
  const std::vector<Affinity>& affinities = AffinitiesOf(machine);
  const Affinity own = AffinityOf(ask);
  const bool shares =
      std::binary_search(affinities.begin(), affinities.end(), own);
  int64_t tier = 0;
  if (shares) {
    tier = affinities.size() == 1 ? 75 : 50;
  } else if (affinities.empty()) {
    tier = 25;
  }
  const int64_t used = max_device_milli_ - cluster::IdleDeviceMilli(machine);
  const int64_t score = 25 * used / max_device_milli_ + tier;
  return NodeChoice{.cost = -static_cast<double>(score)};
}

}  // namespace flowsched::baselines
