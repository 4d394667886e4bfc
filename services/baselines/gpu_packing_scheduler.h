#pragma once

// "packing": the FGD paper's GPU packing baseline, scored as the authors'
// simulator does (gpu_packing_score.go, integer scores out of 100, the
// highest wins): a task that needs only devices already in use scores
// 100 - (sum over its devices of free milli / 10) / 10, at least 50; one
// that needs unused devices on a machine already running something scores
// 50 - (unused devices it takes), at least 33; on a machine whose devices
// are all unused, 33 - (their count), at least that count. A task asking
// no device scores 0 everywhere. Devices as FitTask picks them (the
// simulator's order: least free milli first).

#include <string_view>

#include "services/baselines/node_score_scheduler.h"

namespace flowsched::baselines {

class GpuPackingScheduler final : public NodeScoreScheduler {
 public:
  [[nodiscard]] std::string_view name() const override { return "packing"; }

 protected:
  void BeginRound(const cluster::ClusterState&) override {}
  std::optional<NodeChoice> Evaluate(const cluster::Machine& machine,
                                     const cluster::Task& task,
                                     const cluster::Fit& fit) override;
};

}  // namespace flowsched::baselines
