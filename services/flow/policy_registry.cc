#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/flow/cpu_memory_policy.h"
#include "services/flow/load_spreading_policy.h"
#include "services/flow/network_aware_policy.h"
#include "services/flow/priority_policy.h"
#include "services/flow/quincy_policy.h"
#include "services/flow/scheduling_policy.h"

namespace flowsched::flow {

std::vector<std::string> PolicyNames() {
  return {"load-spreading", "cpu-memory", "priority",
          "network-aware",  "quincy-qfp", "quincy-qf",
          "quincy-qp",      "quincy-q",   "quincy-qfpx"};
}

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> MakePolicy(
    std::string_view name) {
  if (name == "load-spreading") {
    return std::make_unique<LoadSpreadingPolicy>();
  }
  if (name == "cpu-memory") return std::make_unique<CpuMemoryPolicy>();
  if (name == "priority") return std::make_unique<PriorityPolicy>();
  if (name == "network-aware") return std::make_unique<NetworkAwarePolicy>();
  for (QuincyVariant variant :
       {QuincyVariant::kQfp, QuincyVariant::kQf, QuincyVariant::kQp,
        QuincyVariant::kQ, QuincyVariant::kQfpx}) {
    auto policy =
        std::make_unique<QuincyPolicy>(QuincyParams::ForVariant(variant));
    if (policy->name() == name) return policy;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown policy '", std::string(name),
                   "'; known: ", absl::StrJoin(PolicyNames(), ", ")));
}

}  // namespace flowsched::flow
