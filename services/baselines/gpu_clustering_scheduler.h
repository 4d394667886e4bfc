#pragma once

// "clustering": the FGD paper's GPU clustering baseline, scored as the
// authors' simulator does (gpu_clustering_score.go, integer scores out of
// 100, the highest wins), a task's "affinity" being the simulator's tag
// of its device ask: any fraction ("share-gpu"), or n whole devices. Each
// machine scores 25 x (D - idle) / D for its idle milli (D: the largest
// machine's device milli), plus 75 when every device-using task there has the
// task's affinity, 50 when some have it among others, 25 when none uses a
// device, 0 otherwise. A task asking no device scores 0 everywhere. Devices as
// FitTask picks them.
//
// The affinities of a machine are cached and recomputed when its running
// set changes (no task lookups for machines that did not change).

#include <cstdint>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "services/baselines/node_score_scheduler.h"

namespace flowsched::baselines {

class GpuClusteringScheduler final : public NodeScoreScheduler {
 public:
  [[nodiscard]] std::string_view name() const override { return "clustering"; }

 protected:
  void BeginRound(const cluster::ClusterState& state) override;
  std::optional<NodeChoice> Evaluate(const cluster::Machine& machine,
                                     const cluster::Task& task,
                                     const cluster::Fit& fit) override;

 private:
  using Affinity = std::pair<uint32_t, bool>;  // whole, a fraction
  struct MachineAffinities {
    std::vector<TaskId> running;     // the running set they were read from
    std::vector<Affinity> distinct;  // sorted
  };
  const std::vector<Affinity>& AffinitiesOf(const cluster::Machine& machine);

  const cluster::ClusterState* state_ = nullptr;
  int64_t max_device_milli_ = 1;
  std::map<MachineId, MachineAffinities> cache_;
};

}  // namespace flowsched::baselines
