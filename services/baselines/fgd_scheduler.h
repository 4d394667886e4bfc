#pragma once

// "fgd": Fragmentation Gradient Descent (Weng et al., ATC 2023): the
// machine and devices where booking the task increases the machine's
// fragmentation least (cluster::FragmentationDelta against the target
// workload), ties to the lowest machine id, then the lowest device index.
// A fraction tries every device that can take it (cluster::FitTaskOnDevices
// on that one device; devices of the same model and free milli as one
// already tried give the same delta and are skipped); whole devices take
// FitTask's devices (all unused devices of a model are alike).
//
// Cost per task: O(machines x devices x shapes x devices).

#include <string_view>

#include "services/baselines/node_score_scheduler.h"
#include "services/cluster/gpu_fragmentation.h"

namespace flowsched::baselines {

class FgdScheduler final : public NodeScoreScheduler {
 public:
  // Empty `workload`: built from the state's tasks at the first round.
  explicit FgdScheduler(cluster::TargetWorkload workload)
      : workload_(std::move(workload)), built_(!workload_.shapes().empty()) {}
  [[nodiscard]] std::string_view name() const override { return "fgd"; }
  [[nodiscard]] const cluster::TargetWorkload& workload() const {
    return workload_;
  }

 protected:
  void BeginRound(const cluster::ClusterState& state) override;
  std::optional<NodeChoice> Evaluate(const cluster::Machine& machine,
                                     const cluster::Task& task,
                                     const cluster::Fit& fit) override;

 private:
  cluster::TargetWorkload workload_;
  bool built_ = false;
};

}  // namespace flowsched::baselines
