#pragma once

// GPU sharing priced by fragmentation (`gpu-fgd`): the FGD paper's measure
// (Weng et al., USENIX ATC 2023; cluster::FragmentationDelta) as the cost of
// each placement, solved for the whole batch of waiting tasks at once. A
// built-in profile (profile_policy.h) with gates (machine_gates.h):
//
//   waiting task --(0)--> EC_s --(one task's price, cap 1)--> G_m --(1)--> M
//   waiting task --(unscheduled_cost)--> U_job --(tasks of job)--> S
//   running task --(0)--> its machine; --(preemption_cost)--> U_job
//   M --(free slots)--> S
//
// G_m admits one new task per round, so every price is exact for the
// machine as it is, and a burst larger than the machines with room takes
// several rounds. The price, in `unit`s of 10,000 cost units per score
// level (1,000 per whole GPU of delta F when score_levels is 0):
//   - fragmentation (terms/fragmentation_term.h): with `score_levels` L > 0
//     the FGD authors' node score made a cost, L - floor(L * sigmoid(-delta
//     F / 1000)) levels, so deltas the score cannot tell apart tie; with
//     L = 0, delta F in milli-GPU (negative when it shrinks);
//   - best_fit levels (or whole GPUs) times the paper's BestFit measure
//     (terms/pack_term.h, over three dimensions, so weighed 3 * best_fit):
//     the most-allocated machine wins among near-equal scores;
//   - model_affinity levels (or whole GPUs) times the share of the task's
//     devices not of a preferred model (terms/model_affinity_term.h);
//   - with `first_fit` and L > 0, the machine's position in id order
//     (terms/machine_order_term.h) below one level: ties go to the machine
//     earliest in id order (a packing rule; the authors' simulator breaks
//     ties so).
// Each term is rounded to whole cost units on its own, and so is each
// weight (3 * best_fit and model_affinity times the unit). Waiting costs more
// than any placement: a round places a task on every machine where some
// waiting task fits. Running tasks never move (as in cpu-memory).
//
// GpuFragmentationPolicy(params) is exactly ProfilePolicy(Gpu-
// FragmentationProfile(params)) named "gpu-fgd";
// gpu_fragmentation_policy_test.cc pins the network it built before it was
// a profile (each term rounded on its own, as since then).

#include <cstdint>

#include "services/flow/profile_policy.h"

namespace flowsched::flow {

struct GpuFragmentationParams {
  // Levels of the sigmoid score (0: price delta F in milli-GPU exactly).
  int64_t score_levels = 100;
  // 1: ties of the score go to the machine earliest in id order.
  int64_t first_fit = 1;
  // Weight of the most-allocated term (0: none), in score levels, or in
  // whole GPUs of delta F when score_levels is 0.
  double best_fit = 0.5;
  // Cost, in the same unit, of a task's devices all being of a model it
  // does not prefer (AcceleratorRequest::preferred_models).
  double model_affinity = 10;
  // Above any placement's cost.
  int64_t unscheduled_cost = 100'000'000;
  int64_t preemption_cost = 100'000'000;
  // Share of the tasks whose shapes make the expected workload (the
  // paper's podPopularityThreshold, 95%).
  double workload_coverage = 0.95;
};

// The profile gpu-fgd is.
ProfileParams GpuFragmentationProfile(const GpuFragmentationParams& params);

class GpuFragmentationPolicy final : public ProfilePolicy {
 public:
  explicit GpuFragmentationPolicy(GpuFragmentationParams params = {})
      : ProfilePolicy(GpuFragmentationProfile(params), "gpu-fgd") {}
};

}  // namespace flowsched::flow
