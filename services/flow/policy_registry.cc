#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "services/flow/load_spreading_policy.h"
#include "services/flow/scheduling_policy.h"

namespace flowsched::flow {

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> MakePolicy(
    std::string_view name) {
  if (name == "load-spreading") {
    return std::make_unique<LoadSpreadingPolicy>();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown policy '", std::string(name), "'; known: load-spreading"));
}

}  // namespace flowsched::flow
