#pragma once

// "dot-product": Tetris's alignment score (Grandl et al., SIGCOMM 2014), as
// the FGD paper's DotProd baseline: the machine whose free vector (CPU,
// memory, free milli of all devices), each dimension divided by the
// largest machine's capacity, has the largest dot product with the task's
// request normalised the same way. Devices as FitTask picks them (best
// fit, the simulator's `-gpusel best`).

#include <string_view>

#include "services/baselines/node_score_scheduler.h"

namespace flowsched::baselines {

class DotProductScheduler final : public MaxSpecScoreScheduler {
 public:
  [[nodiscard]] std::string_view name() const override { return "dot-product"; }

 protected:
  std::optional<NodeChoice> Evaluate(const cluster::Machine& machine,
                                     const cluster::Task& task,
                                     const cluster::Fit& fit) override;
};

}  // namespace flowsched::baselines
