#pragma once

// GPU fragmentation (the FGD paper, Weng et al., USENIX ATC 2023): how much
// placing one task of the shape on the machine, on the devices the fit
// rule gives it (cluster::FitTask, the ones the graph manager books),
// grows the machine's fragmentation for the expected workload
// (cluster::FragmentationDelta, milli-GPU; negative when it shrinks).
//
// With `levels` L > 0 the value is the authors' node score made a cost,
// (L - floor(L * sigmoid(-delta / 1000))) / L in [0, 1]: deltas the score
// cannot tell apart (among them every large one) tie. With L = 0 it is the
// delta itself over kMaxDeltaMilli, in [-1, 1], so a weight of
// kMaxDeltaMilli prices it in milli-GPU (clamped on a deployment that lets
// machines announce more than the default 64 devices).
//
// The expected workload is the shapes of the tasks the cluster holds,
// running and waiting, covering `coverage` of them (the paper's
// podPopularityThreshold); Prepare rebuilds it when their number moved by
// a third since the last build, and says so, since every machine's value
// then moves. So a fresh term (a restarted service, `flowsched explain`)
// may price against a workload the long-lived one has not rebuilt to yet.
// 0 for a machine where no task of the shape fits.

#include <cstddef>
#include <cstdint>

#include "services/cluster/gpu_fragmentation.h"
#include "services/flow/terms/placement_term.h"

namespace flowsched::flow {

class FragmentationTerm final : public PlacementTerm {
 public:
  // The largest delta: a machine's fragmentation is at most its idle
  // device milli, at most 1,000 on each of the 64 devices the validation
  // limits let it announce.
  static constexpr double kMaxDeltaMilli = 64'000;

  FragmentationTerm(int64_t levels, double coverage)
      : levels_(levels), coverage_(coverage) {}
  [[nodiscard]] bool depends_on_k() const override { return false; }
  bool Prepare(const cluster::ClusterState& state) override;
  [[nodiscard]] double Value(const cluster::Machine& machine,
                             const RequestShape& shape,
                             int64_t k) const override;

 private:
  int64_t levels_;
  double coverage_;
  cluster::TargetWorkload workload_;
  size_t workload_tasks_ = 0;  // tasks the workload was built from
  bool built_ = false;
};

}  // namespace flowsched::flow
