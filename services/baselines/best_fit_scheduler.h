#pragma once

// "best-fit": the FGD paper's BestFit baseline: the machine with the least
// sum over CPU, memory and device milli of (free - request) / (largest
// machine's capacity), each dimension weighted 1. Devices as FitTask picks
// them (the fraction on the device with the least free milli that holds
// it).

#include <string_view>

#include "services/baselines/node_score_scheduler.h"

namespace flowsched::baselines {

class BestFitScheduler final : public MaxSpecScoreScheduler {
 public:
  [[nodiscard]] std::string_view name() const override { return "best-fit"; }

 protected:
  std::optional<NodeChoice> Evaluate(const cluster::Machine& machine,
                                     const cluster::Task& task,
                                     const cluster::Fit& fit) override;
};

}  // namespace flowsched::baselines
