#include "services/solver/portfolio.h"

#include <thread>
#include <utility>

#include "services/solver/cost_scaling.h"
#include "services/solver/relaxation.h"

namespace flowsched::solver {

absl::StatusOr<McmfSolution> Portfolio::Solve(const McmfProblem& problem) {
  std::atomic<bool> local_stop{false};
  std::atomic<bool>* stop = race_stop_ != nullptr ? race_stop_ : &local_stop;
  // 0: no winner yet, 1: relaxation, 2: cost scaling.
  std::atomic<int> winner{0};
  absl::StatusOr<McmfSolution> relaxed =
      absl::UnknownError("relaxation did not run");
  std::thread relaxation_thread([&] {
    Relaxation relaxation;
    relaxation.set_stop_flag(stop);
    relaxed = relaxation.Solve(problem);
    int none = 0;
    if (relaxed.ok() && winner.compare_exchange_strong(none, 1)) stop->store(true);
  });
  CostScalingOptions options;
  options.stop = stop;
  absl::StatusOr<McmfSolution> scaled = CostScaling(options).Solve(problem);
  int none = 0;
  if (scaled.ok() && winner.compare_exchange_strong(none, 2)) stop->store(true);
  relaxation_thread.join();
  switch (winner.load()) {
    case 1:
      return relaxed;
    case 2:
      return scaled;
    default:
      // Neither finished: both were stopped by the caller (Cancelled), or
      // both failed the same way (e.g. InvalidArgument).
      return scaled.status();
  }
}

}  // namespace flowsched::solver
