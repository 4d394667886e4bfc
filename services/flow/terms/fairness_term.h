#pragma once

// Quincy's fairness (SOSP 2009 sections 3.3 and 4.3): bounds
// E_j <= running tasks <= F_j per job, which the network encodes as
// capacities on the job's unscheduled node, so a job below its fair share
// gets slots before one above it whatever the placement costs.
//
// A_j, the fair share, is min(M / K, N_j) of the M slots among the K
// admitted jobs (the first admission_limit by id, or all), the slots left
// over going equally to the jobs with more tasks. Then:
//   fair, preemptive (QFP):   E_j = F_j = A_j
//   fair, not preemptive (QF): a job running more than its share keeps
//                             what it runs, the others' shares cut in
//                             proportion to their size; E_j = F_j = A_j
//   unfair (QP, Q):           E_j = 1, F_j = N_j (E_j = N_j if N <= M)
//   not admitted:             E_j = F_j = 0
// Without preemption running tasks stay, so F_j covers them and only the
// new placements E_j - running_j must fit the free slots. Lower bounds that
// the slots cannot meet are cut from the last job (latest submitted) first
// (not in the paper, which admits K <= M jobs).

#include <cstdint>
#include <utility>
#include <vector>

#include "services/cluster/cluster_state.h"
#include "services/cluster/cluster_types.h"

namespace flowsched::flow {

// One job's counts and bounds.
struct QuincyJobBounds {
  int64_t tasks = 0;  // N_j
  int64_t running = 0;
  int64_t share = 0;        // A_j (after QF's adjustment)
  int64_t min_running = 0;  // E_j
  int64_t max_running = 0;  // F_j
};
// Bounds in job id order.
using QuincyBoundsByJob = std::vector<std::pair<JobId, QuincyJobBounds>>;

struct FairnessParams {
  bool fair = true;
  bool preemptive = true;
  uint32_t admission_limit = 0;  // 0: every job is admitted
};

class FairnessTerm {
 public:
  explicit FairnessTerm(FairnessParams params) : params_(params) {}

  // A job's counts (N_j and its running tasks; the bounds 0).
  static QuincyJobBounds Counts(const cluster::Job& job);
  // `bounds` := every job's counts, in job id order.
  static void CountJobs(const cluster::ClusterState& state,
                        QuincyBoundsByJob& bounds);
  // Shares and bounds from the counts in `bounds` (in job id order: a
  // position tells admission) and the slots of `state`.
  void Derive(const cluster::ClusterState& state,
              QuincyBoundsByJob& bounds) const;

 private:
  FairnessParams params_;
};

}  // namespace flowsched::flow
