#pragma once

// Queue- and score-based baselines to compare the flow scheduler against:
// Quincy's greedy (G) and greedy-fair (GF) queue schedulers (SOSP 2009, §3)
// and a Kubernetes-like filter-then-score scheduler.
//
// A baseline only proposes placements; the caller applies them with
// ClusterState::Place. Every returned batch fits the state it was computed
// from when applied in order: cluster::FitTask, the same check Place makes
// (slots, resources, named scalars, accelerator devices).
// Baselines never preempt or migrate.

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "services/cluster/cluster_state.h"
#include "services/common/strong_id.h"

namespace flowsched::baselines {

struct BaselinePlacement {
  TaskId task;
  MachineId machine;
  bool operator==(const BaselinePlacement&) const = default;
};

class BaselineScheduler {
 public:
  virtual ~BaselineScheduler() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // Placements for waiting tasks onto the free capacity of `state`.
  virtual std::vector<BaselinePlacement> Schedule(
      const cluster::ClusterState& state) = 0;
};

// "greedy" (Quincy G), "greedy-fair" (Quincy GF) or "filter-score"
// (kube-like). InvalidArgument for any other name.
absl::StatusOr<std::unique_ptr<BaselineScheduler>> MakeBaseline(
    std::string_view name);

}  // namespace flowsched::baselines
