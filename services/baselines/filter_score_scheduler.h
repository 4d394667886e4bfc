#pragma once

// A Kubernetes-like baseline: tasks one at a time in task-id order; filter
// the machines the task fits (cluster::FitTask), score each by
// least-allocated plus a data-locality bonus, and bind to the best (ties go
// to the lowest machine id). Later tasks see earlier bindings of the round.
//
// Score = LeastAllocated + kMachineLocalityWeight * (input fraction on the
// machine) + kRackLocalityWeight * (input fraction in its rack).
// LeastAllocated is the mean free fraction, after placement, of the CPU and
// memory dimensions the machine reports, or of its slots when it reports
// neither; all terms are in [0, 1] so one weight reads as "worth that much
// free capacity".

#include <string_view>
#include <vector>

#include "services/baselines/baseline_scheduler.h"

namespace flowsched::baselines {

inline constexpr double kMachineLocalityWeight = 1.0;
inline constexpr double kRackLocalityWeight = 0.5;

class FilterScoreScheduler final : public BaselineScheduler {
 public:
  [[nodiscard]] std::string_view name() const override {
    return "filter-score";
  }
  std::vector<BaselinePlacement> Schedule(
      const cluster::ClusterState& state) override;
};

}  // namespace flowsched::baselines
