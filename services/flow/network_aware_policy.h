#pragma once

// Firmament's network-aware policy (OSDI 2016, section 3.3, figure 6c):
// tasks that request the same network bandwidth share a request aggregator,
// which has arcs only to machines with spare bandwidth for such a request,
// with capacity = how many such requests fit and cost = the bandwidth the
// machine already carries plus the request, which steers tasks to lightly
// loaded links. A built-in profile (profile_policy.h) of one cost term,
// network (weight 1: cost in MiB/s), with the spare bandwidth measured
// against reported use:
//
//   waiting task --(0)--> EC_s --(k-th: load(m) + k b; cap = fits)--> M
//   waiting task --(unscheduled_cost)--> U_job --(tasks of job)--> S
//   running task --(0)--> its machine; --(preemption_cost)--> U_job
//   M --(slots)--> S
//
// load(m) is the larger of the machine's reported use (MachineUsage) and
// the requests of the tasks placed on it (reports lag placements), and a
// machine's spare bandwidth is its capacity less load(m)
// (network_room_by_use). The request aggregators are the request-shape
// classes: every machine's room is reserved among them greedily in an order
// rotated per machine, so several cannot jointly overcommit a link in one
// round. A machine that reports no network capacity (0) is not limited by
// bandwidth; a task without a request goes to every machine with a free
// slot at cost load(m).
//
// NetworkAwarePolicy(params) is ProfilePolicy(NetworkAwareProfile(params))
// named "network-aware", with a task's arc to its job's U listed last as
// the class listed it (JobArc::kLast: the solver's tie-breaks follow arc
// order); network_aware_policy_test.cc pins the network the class built
// before it was a profile. What differs from the class:
//   - tasks that also ask for CPU, memory, scalars, devices or labels
//     (placed by bandwidth and slots alone, to go stale) fit by every
//     resource, and shapes that differ in those asks are classes of their
//     own;
//   - reservations rotate through the shapes in key order, where the
//     bandwidth is decimal text: requests of different digit counts (50
//     and 100 MiB/s) rotate in another order than the class's numeric one;
//   - a machine that has reserved room stops offering it after kMaxMisses
//     shapes in a row that do not fit (request_shapes.h), where the class
//     offered it to every request: with more than 32 requests waiting, a
//     small one late in a machine's rotation may miss a link with room;
//   - different-machines jobs keep their rule, and a starving gang is
//     offered room first (gang_first_after_s), so the policy is
//     time-dependent (a Refresh before each round);
//   - links are priced up to 512 Gbit/s (NetworkLoadTerm::kMaxMiBps),
//     beyond which all look full.

#include <cstdint>

#include "services/flow/profile_policy.h"

namespace flowsched::flow {

struct NetworkAwareParams {
  // Should exceed the dearest placement, the network term's bound of 65,536
  // MiB/s (a 100 Gbit/s link's load and request come to about 24,000), or a
  // task could wait beside a link with room. Not enforced: the range stays
  // the one stored specs were accepted with.
  int64_t unscheduled_cost = 100'000;
  int64_t preemption_cost = 200'000;
  // Seconds a gang member waits before its shape gets first offer of
  // every machine's room (0: never; profile_policy.h says why).
  double gang_first_after_s = 60;
};

// The profile network-aware is.
ProfileParams NetworkAwareProfile(const NetworkAwareParams& params);

class NetworkAwarePolicy final : public ProfilePolicy {
 public:
  explicit NetworkAwarePolicy(NetworkAwareParams params = {})
      : ProfilePolicy(NetworkAwareProfile(params), "network-aware",
                      JobArc::kLast) {}
};

}  // namespace flowsched::flow
