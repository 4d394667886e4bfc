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
// "fgd-sigmoid" ranks by the authors' simulator's integer score instead:
// floor(100 x sigmoid(-delta / 1000)), the highest wins, ties as above, so
// deltas within a few tens of milli tie and go to the lowest machine id (a
// packing tie-break the exact ranking lacks).
//
// Cost per task: O(machines x devices x shapes x devices).

#include <string_view>

#include "services/baselines/node_score_scheduler.h"
#include "services/cluster/gpu_fragmentation.h"

namespace flowsched::baselines {

class FgdScheduler final : public NodeScoreScheduler {
 public:
  // Empty `workload`: built from the state's tasks at the first round.
  // `sigmoid_score`: rank by the simulator's integer score ("fgd-sigmoid").
  FgdScheduler(cluster::TargetWorkload workload, bool sigmoid_score)
      : workload_(std::move(workload)),
        built_(!workload_.shapes().empty()),
        sigmoid_score_(sigmoid_score) {}
  [[nodiscard]] std::string_view name() const override {
    return sigmoid_score_ ? "fgd-sigmoid" : "fgd";
  }
  [[nodiscard]] const cluster::TargetWorkload& workload() const {
    return workload_;
  }

 protected:
  void BeginRound(const cluster::ClusterState& state) override;
  std::optional<NodeChoice> Evaluate(const cluster::Machine& machine,
                                     const cluster::Task& task,
                                     const cluster::Fit& fit) override;

 private:
  // The cost of a fragmentation delta (lower is better).
  [[nodiscard]] double Cost(double delta) const;

  cluster::TargetWorkload workload_;
  bool built_ = false;
  bool sigmoid_score_ = false;
};

}  // namespace flowsched::baselines
