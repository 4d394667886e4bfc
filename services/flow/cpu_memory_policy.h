#pragma once

// `cpu-memory`: multi-dimensional placement (CPU, memory, named scalars,
// accelerator devices) with feasibility, in the style of Firmament's
// CPU/memory cost model (Gog, PhD thesis 2016, ch. 7; OSDI 2016 section
// 3.3 mentions it as the production extension of 6c). A built-in profile
// (profile_policy.h): the fit rule and different-machines filters, and two
// cost terms,
//   spread (weight util_scale): the k-th task of a shape on a machine
//     costs util_scale * max(CPU, memory utilisation after k tasks), so one
//     round spreads a burst;
//   preferred_labels (weight preferred_discount): machines that match the
//     shape's preferred labels cost that much less.
// CpuMemoryPolicy(params) is exactly ProfilePolicy(CpuMemoryProfile(params))
// named "cpu-memory"; profile_policy_test.cc pins its costs to the formula
// above.

#include <cstdint>
#include <string>

#include "services/flow/profile_policy.h"

namespace flowsched::flow {

struct CpuMemoryParams {
  // Cost of a fully used machine; utilisation scales linearly below it.
  int64_t util_scale = 1000;
  // Should exceed util_scale so that a machine that fits always beats
  // waiting (then repeated rounds leave no fitting task waiting).
  int64_t unscheduled_cost = 100'000;
  int64_t preemption_cost = 200'000;
  // Discount on machines that match a preferred selector, in cost units
  // (half a fully loaded machine by default).
  int64_t preferred_discount = 500;
  // Seconds a gang member waits before its shape gets first offer of
  // every machine's room (0: never).
  double gang_first_after_s = 60;
};

// The profile cpu-memory is.
ProfileParams CpuMemoryProfile(const CpuMemoryParams& params);

class CpuMemoryPolicy final : public ProfilePolicy {
 public:
  explicit CpuMemoryPolicy(CpuMemoryParams params = {})
      : ProfilePolicy(CpuMemoryProfile(params), "cpu-memory") {}

  // The class key of a waiting task (exposed for tests and explanations).
  static std::string ClassText(const cluster::Task& task,
                               const cluster::ClusterState& state);
};

}  // namespace flowsched::flow
