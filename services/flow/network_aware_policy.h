#pragma once

// Firmament's network-aware policy (OSDI 2016, section 3.3, figure 6c):
// tasks that request the same network bandwidth share a request aggregator
// RA_b, and RA_b has arcs only to machines with spare bandwidth for such a
// request, with capacity = how many such requests fit and cost = the
// request plus the bandwidth the machine already uses, which steers tasks
// to lightly loaded links.
//
//   waiting task --(0)--> RA_b --(k-th: load(m) + k b; cap = fits)--> M
//   waiting task --(unscheduled_cost)--> U_job --(tasks of job)--> S
//   running task --(0)--> its machine; --(preemption_cost)--> U_job
//   M --(slots)--> S
//
// load(m) is the larger of the machine's reported use (MachineUsage) and
// the requests of the tasks placed on it (reports lag placements), and
// spare(m) = capacity - load(m). Costs are in MiB/s. The k-th further task
// of one RA on a machine costs load + k * b (convex pieces), so one round
// spreads a burst. Like cpu-memory, RAs reserve each machine's spare
// bandwidth greedily in a rotated order so that several RAs cannot jointly
// overcommit a link in one round. A machine that reports no network
// capacity (0) is not limited by bandwidth; a task without a request goes
// to every machine with a free slot at cost load(m).

#include <cstdint>

#include "services/flow/scheduling_policy.h"

namespace flowsched::flow {

struct NetworkAwareParams {
  // Must exceed the largest cost (load + request of a 100 Gbit/s link is
  // about 24,000 MiB/s) so that a machine with room beats waiting.
  int64_t unscheduled_cost = 100'000;
  int64_t preemption_cost = 200'000;
};

class NetworkAwarePolicy final : public SchedulingPolicy {
 public:
  explicit NetworkAwarePolicy(NetworkAwareParams params = {})
      : params_(params) {}
  [[nodiscard]] std::string_view name() const override {
    return "network-aware";
  }
  using SchedulingPolicy::Sync;
  absl::Status Sync(const cluster::ChangeSet& changes,
                    const cluster::ClusterState& state,
                    const SyncContext& context,
                    NetworkBuilder& builder) override;

  // The key of the request aggregator for a bandwidth request.
  static uint64_t AggregatorKey(int64_t bytes_per_sec);

 private:
  NetworkAwareParams params_;
};

}  // namespace flowsched::flow
