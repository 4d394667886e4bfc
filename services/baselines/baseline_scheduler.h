#pragma once

// Queue- and score-based baselines to compare the flow scheduler against:
// Quincy's greedy (G) and greedy-fair (GF) queue schedulers (SOSP 2009, §3),
// a Kubernetes-like filter-then-score scheduler, and the GPU schedulers the
// FGD paper compares (Weng et al., ATC 2023: random, dot-product,
// clustering, packing, best-fit, fgd).
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
#include "services/cluster/gpu_fragmentation.h"
#include "services/common/strong_id.h"

namespace flowsched::baselines {

struct BaselinePlacement {
  TaskId task;
  MachineId machine;
  // The devices the baseline booked for the task (the GPU baselines name
  // them; FGD chooses them). Empty: ClusterState::Place picks them
  // (cluster::FitTask), as for greedy, greedy-fair and filter-score.
  std::vector<cluster::DeviceShare> devices;
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

struct BaselineOptions {
  uint64_t seed = 1;  // "random"
  // "fgd", "fgd-sigmoid": the task shapes fragmentation is measured
  // against. Empty: built
  // (cluster::TargetWorkload::Build, 95%) from the state's tasks at the
  // scheduler's first round.
  cluster::TargetWorkload target_workload;
};

// "greedy" (Quincy G), "greedy-fair" (Quincy GF), "filter-score"
// (kube-like), or a GPU baseline of the FGD paper: "random", "dot-product",
// "clustering", "packing", "best-fit", "fgd", "fgd-sigmoid" (see README.md).
// InvalidArgument for any other name.
absl::StatusOr<std::unique_ptr<BaselineScheduler>> MakeBaseline(
    std::string_view name, const BaselineOptions& options = {});

// The names MakeBaseline accepts, in the README's order.
[[nodiscard]] const std::vector<std::string_view>& BaselineNames();

}  // namespace flowsched::baselines
