#include "services/solver/portfolio.h"

#include <thread>
#include <utility>

#include "services/solver/cost_scaling.h"
#include "services/solver/relaxation.h"

namespace flowsched::solver {

absl::StatusOr<McmfSolution> Portfolio::Solve(const McmfProblem& problem) {
  return Race(problem, nullptr);
}

absl::StatusOr<McmfSolution> Portfolio::SolveFrom(
    const McmfProblem& problem, const std::vector<int64_t>& flow,
    const std::vector<int64_t>& potentials) {
  const WarmStart warm{flow, potentials};
  return Race(problem, &warm);
}

absl::StatusOr<McmfSolution> Portfolio::Race(const McmfProblem& problem,
                                             const WarmStart* warm) {
  std::atomic<bool> local_stop{false};
  std::atomic<bool>* stop = race_stop_ != nullptr ? race_stop_ : &local_stop;
  // 0: no winner yet, 1: relaxation, 2: cost scaling.
  std::atomic<int> winner{0};
  absl::StatusOr<McmfSolution> relaxed =
      absl::UnknownError("relaxation did not run");
  std::thread relaxation_thread([&] {
    Relaxation relaxation;
    relaxation.set_stop_flag(stop);
    relaxed = warm == nullptr
                  ? relaxation.Solve(problem)
                  : relaxation.SolveFrom(problem, {warm->flow, warm->potentials});
    int none = 0;
    if (relaxed.ok() && winner.compare_exchange_strong(none, 1)) stop->store(true);
  });
  CostScalingOptions options;
  options.stop = stop;
  absl::StatusOr<McmfSolution> scaled =
      warm == nullptr
          ? CostScaling(options).Solve(problem)
          : CostScaling(options).SolveFrom(problem, warm->flow, warm->potentials);
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
