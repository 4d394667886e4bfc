#pragma once

// GPU sharing priced by fragmentation (`gpu-fgd`): the FGD paper's measure
// (Weng et al., USENIX ATC 2023; cluster::FragmentationDelta) as the cost of
// each placement, solved for the whole batch of waiting tasks at once.
//
//   waiting task --(0)--> EC_s --(delta F of s on m, cap 1)--> G_m --(1)--> M
//   waiting task --(unscheduled_cost)--> U_job --(tasks of job)--> S
//   running task --(0)--> its machine; --(preemption_cost)--> U_job
//   M --(free slots)--> S
//
// EC_s are the request shapes of the waiting tasks (request_shapes.h).
// G_m, one gate per machine with a free slot, admits one new task per
// round, so any flow fits: a shape has an arc to G_m only where one of its
// tasks fits by the one fit rule (cluster::FitTask, with required labels
// and the different-machines rule as ReserveMachine applies them). A
// burst larger than the machines with room takes several rounds.
//
// The cost of EC_s -> G_m prices how much placing one task of s on m (on
// the devices FitTask gives it, the ones the graph manager books) grows m's
// fragmentation for the expected workload, delta F in milli-GPU (negative
// when it shrinks). The expected workload is the shapes of the tasks the
// cluster holds (running and waiting), rebuilt when their number moved by
// a third since the last build. With `score_levels` L > 0 the price is the FGD
// authors' node score made a cost: L - floor(L * sigmoid(-delta F / 1000)),
// so deltas that the score cannot tell apart (among them every large one)
// tie, and with `first_fit` a tie goes to the machine earliest in id
// order (a packing rule; the authors' simulator breaks ties the same way).
// With L = 0 the price is delta F itself. A `best_fit` weight W adds the
// paper's BestFit measure (cluster::BestFitLeftover: what the machine keeps
// free of CPU, memory and GPU after the task, each over the largest
// machine's, summed) times W score levels, or W whole GPUs of delta F when
// L = 0: the most-allocated machine wins among near-equal fragmentation
// scores. A task with preferred models pays `model_affinity` levels (or
// whole GPUs) times the share of its devices that are of another model.
// Each term is rounded to whole cost units on its own. Every machine's arcs are
// priced again when it changes, so a machine's costs follow it as it fills.
// Waiting costs more than any placement: a round places a task on every machine
// where some waiting task fits.
//
// Running tasks never move (as in cpu-memory).

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "services/cluster/gpu_fragmentation.h"
#include "services/cluster/resource_vector.h"
#include "services/flow/request_shapes.h"
#include "services/flow/scheduling_policy.h"

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

class GpuFragmentationPolicy final : public SchedulingPolicy {
 public:
  explicit GpuFragmentationPolicy(GpuFragmentationParams params = {})
      : params_(params) {}
  [[nodiscard]] std::string_view name() const override { return "gpu-fgd"; }
  using SchedulingPolicy::Sync;
  absl::Status Sync(const cluster::ChangeSet& changes,
                    const cluster::ClusterState& state,
                    const SyncContext& context,
                    NetworkBuilder& builder) override;

 private:
  // Rebuilds workload_ from the state's tasks when their count moved by a
  // third or more since the last build; whether it did.
  bool RefreshWorkload(const cluster::ClusterState& state);
  // Brings prices_ in step with `changes`: every price again when the
  // workload or the set of machines changed (ranks shift), else the
  // changed machines' prices of every waiting shape and a new shape's on
  // every machine; shapes no longer waiting are dropped.
  void UpdatePrices(const cluster::ChangeSet& changes,
                    const cluster::ClusterState& state,
                    const std::vector<RequestShape>& shapes,
                    bool workload_rebuilt);
  // Adds `machine`'s price for `shape` to `fitting` if a task fits.
  void PriceOn(const cluster::Machine& machine,
               const cluster::ClusterState& state, const RequestShape& shape,
               std::map<MachineId, int64_t>& fitting) const;
  // The price of `shape`'s arc to `machine`'s gate (below), or kNoFit.
  int64_t Price(const cluster::Machine& machine,
                const cluster::ClusterState& state, const RequestShape& shape,
                int64_t rank) const;
  // The cost of one task of `shape` on `machine` with `devices`; `rank`:
  // the machine's position in id order scaled to [0, kRankRange).
  int64_t PlacementCost(const cluster::Machine& machine,
                        const RequestShape& shape,
                        const std::vector<cluster::DeviceShare>& devices,
                        int64_t rank) const;

  GpuFragmentationParams params_;
  ShapeIndex waiting_;
  cluster::TargetWorkload workload_;
  size_t workload_tasks_ = 0;  // tasks the workload was built from
  bool workload_built_ = false;
  // Shape key -> the machines with a free slot where one of its tasks fits
  // -> the price of the arc to the machine's gate. A machine's prices change
  // only when it does (or the workload), so a round prices the machines it
  // touched and the new shapes.
  absl::flat_hash_map<std::string, std::map<MachineId, int64_t>> prices_;
  // Each machine's position in id order scaled to [0, kRankRange).
  absl::flat_hash_map<MachineId, int64_t> rank_;
  // The largest machine's capacities (best_fit normalises by them).
  cluster::ResourceVector max_spec_;
};

}  // namespace flowsched::flow
