#include "services/baselines/baseline_scheduler.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "services/baselines/best_fit_scheduler.h"
#include "services/baselines/dot_product_scheduler.h"
#include "services/baselines/fgd_scheduler.h"
#include "services/baselines/filter_score_scheduler.h"
#include "services/baselines/gpu_clustering_scheduler.h"
#include "services/baselines/gpu_packing_scheduler.h"
#include "services/baselines/greedy_scheduler.h"
#include "services/baselines/random_fit_scheduler.h"

namespace flowsched::baselines {

const std::vector<std::string_view>& BaselineNames() {
  static const std::vector<std::string_view> kNames = {
      "greedy",     "greedy-fair", "filter-score", "random", "dot-product",
      "clustering", "packing",     "best-fit",     "fgd",    "fgd-sigmoid"};
  return kNames;
}

absl::StatusOr<std::unique_ptr<BaselineScheduler>> MakeBaseline(
    std::string_view name, const BaselineOptions& options) {
  if (name == "greedy") return std::make_unique<GreedyScheduler>(false);
  if (name == "greedy-fair") return std::make_unique<GreedyScheduler>(true);
  if (name == "filter-score") return std::make_unique<FilterScoreScheduler>();
  if (name == "random") {
    return std::make_unique<RandomFitScheduler>(options.seed);
  }
  if (name == "dot-product") return std::make_unique<DotProductScheduler>();
  if (name == "clustering") return std::make_unique<GpuClusteringScheduler>();
  if (name == "packing") return std::make_unique<GpuPackingScheduler>();
  if (name == "best-fit") return std::make_unique<BestFitScheduler>();
  if (name == "fgd" || name == "fgd-sigmoid") {
    return std::make_unique<FgdScheduler>(options.target_workload,
                                          name == "fgd-sigmoid");
  }
  std::string names;
  for (std::string_view known : BaselineNames()) {
    absl::StrAppend(&names, names.empty() ? "" : ", ", std::string(known));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown baseline '", std::string(name), "' (want ", names, ")"));
}

}  // namespace flowsched::baselines
