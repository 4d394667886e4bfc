#include "services/baselines/baseline_scheduler.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "services/baselines/filter_score_scheduler.h"
#include "services/baselines/greedy_scheduler.h"

namespace flowsched::baselines {

absl::StatusOr<std::unique_ptr<BaselineScheduler>> MakeBaseline(
    std::string_view name) {
  if (name == "greedy") return std::make_unique<GreedyScheduler>(false);
  if (name == "greedy-fair") return std::make_unique<GreedyScheduler>(true);
  if (name == "filter-score") return std::make_unique<FilterScoreScheduler>();
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown baseline '", std::string(name),
      "' (want greedy, greedy-fair or filter-score)"));
}

}  // namespace flowsched::baselines
