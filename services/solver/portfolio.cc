#include "services/solver/portfolio.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "services/solver/cost_scaling.h"
#include "services/solver/relaxation.h"
#include "services/solver/scratch_incremental.h"

namespace flowsched::solver {
namespace {

// Relaxation's budget is judged in this many progress windows, each at
// least 10 ms of CPU: below that, units in transit at machines and
// aggregators make a win look stalled, and a loss costs little anyway.
constexpr int64_t kRelaxationStallWindows = 8;
constexpr int64_t kRelaxationMinStallWindowNs = 10'000'000;

// The error of a race nobody won: all were stopped by the caller
// (Cancelled), or all failed the same way (e.g. InvalidArgument), or cost
// scaling refused a cost range the other thread's algorithms accept (its
// price floor is the narrowest: scaled prices within 2^60) and they failed
// later. Their error then says more: usually the problem's own (a total
// cost beyond int64), at worst their own run-time guard.
absl::Status RaceLostStatus(const absl::Status& scaled,
                            const absl::Status& other) {
  if (scaled.code() == absl::StatusCode::kOutOfRange && !other.ok() &&
      other.code() != absl::StatusCode::kCancelled &&
      other.code() != absl::StatusCode::kDeadlineExceeded) {
    return other;
  }
  return scaled;
}

}  // namespace

double MeanSourceOutDegree(const McmfProblem& problem) {
  uint64_t sources = 0;
  for (const int64_t supply : problem.supply) sources += supply > 0 ? 1 : 0;
  if (sources == 0) return 0;
  uint64_t arcs = 0;
  for (const McmfArc& arc : problem.arcs) {
    if (arc.capacity > 0 && problem.supply[arc.src] > 0) ++arcs;
  }
  return static_cast<double>(arcs) / static_cast<double>(sources);
}

absl::StatusOr<McmfSolution> Portfolio::Solve(const McmfProblem& problem) {
  return Race(problem, nullptr);
}

absl::StatusOr<McmfSolution> Portfolio::SolveFrom(
    const McmfProblem& problem, const std::vector<int64_t>& flow,
    const std::vector<int64_t>& potentials) {
  const WarmStart warm{flow, potentials};
  return Race(problem, &warm);
}

RelaxationOptions Portfolio::RacingRelaxationOptions(
    const McmfProblem& problem) const {
  RelaxationOptions options;
  // Cost scaling asks the same max flow on the other core and decides
  // infeasibility; relaxation without it may not see it, and its budget
  // ends it (then the primal-dual takes over the core).
  options.check_feasibility = false;
  options.cpu_budget_ns = std::max(
      relaxation_budget_min_ns,
      relaxation_budget_ns_per_arc * static_cast<int64_t>(problem.arcs.size()));
  // A loss shows itself long before the budget ends: its surplus stops
  // falling (RelaxationOptions::stall_window_ns), and the primal-dual
  // then starts at once.
  options.stall_window_ns =
      std::max(kRelaxationMinStallWindowNs,
               options.cpu_budget_ns / kRelaxationStallWindows);
  return options;
}

absl::StatusOr<McmfSolution> Portfolio::Race(const McmfProblem& problem,
                                             const WarmStart* warm) {
  std::atomic<bool> local_stop{false};
  std::atomic<bool>* stop = race_stop_ != nullptr ? race_stop_ : &local_stop;
  // 0: no winner yet, 1: relaxation, 2: cost scaling, 3: incremental.
  std::atomic<int> winner{0};
  auto finish = [&](const absl::StatusOr<McmfSolution>& result, int id) {
    int none = 0;
    if (result.ok() && winner.compare_exchange_strong(none, id)) {
      stop->store(true);
    }
  };
  absl::StatusOr<McmfSolution> relaxed =
      absl::UnknownError("relaxation did not run");
  absl::StatusOr<McmfSolution> primal_dual =
      absl::UnknownError("incremental did not run");
  // Set on the relaxation thread, read after the join.
  bool primal_dual_ran = false;
  bool relaxation_ran = false;
  auto run_primal_dual = [&] {
    if (!with_primal_dual) return;
    ScratchIncremental incremental;
    incremental.set_stop_flag(stop);
    primal_dual_ran = true;
    primal_dual = incremental.Solve(problem);
    finish(primal_dual, 3);
  };
  std::thread relaxation_thread([&] {
    if (warm != nullptr) {
      Relaxation relaxation;
      relaxation.set_stop_flag(stop);
      relaxation_ran = true;
      relaxed = relaxation.SolveFrom(problem, {warm->flow, warm->potentials});
      finish(relaxed, 1);
      return;
    }
    // From scratch relaxation has a CPU budget, and past it the
    // incremental solver's primal-dual takes over its core: relaxation
    // wins the common case fast, and where it does not it rarely finishes
    // at all. A third thread would cost more: on two cores the scheduler
    // lets two racers share one core for the whole race.
    if (!with_relaxation ||
        (relaxation_min_source_degree > 0 &&
         MeanSourceOutDegree(problem) < relaxation_min_source_degree)) {
      run_primal_dual();
      return;
    }
    Relaxation relaxation(RacingRelaxationOptions(problem));
    relaxation.set_stop_flag(stop);
    relaxation_ran = true;
    relaxed = relaxation.Solve(problem);
    if (relaxed.status().code() != absl::StatusCode::kDeadlineExceeded) {
      finish(relaxed, 1);
      return;
    }
    run_primal_dual();
  });
  CostScalingOptions options;
  options.stop = stop;
  absl::StatusOr<McmfSolution> scaled =
      warm == nullptr ? CostScaling(options).Solve(problem)
                      : CostScaling(options).SolveFrom(problem, warm->flow,
                                                       warm->potentials);
  finish(scaled, 2);
  relaxation_thread.join();
  switch (winner.load()) {
    case 1:
      return relaxed;
    case 2:
      return scaled;
    case 3:
      return primal_dual;
    default:
      if (!primal_dual_ran && !relaxation_ran) return scaled.status();
      return RaceLostStatus(scaled.status(), primal_dual_ran
                                                 ? primal_dual.status()
                                                 : relaxed.status());
  }
}

}  // namespace flowsched::solver
