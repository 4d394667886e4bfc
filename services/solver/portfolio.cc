#include "services/solver/portfolio.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
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

int64_t StaggerDelayNs(int64_t ns_per_arc, uint64_t arcs) {
  constexpr int64_t kDayNs = int64_t{86'400} * 1'000'000'000;
  if (ns_per_arc <= 0 || arcs == 0) return 0;
  if (static_cast<uint64_t>(ns_per_arc) >
      static_cast<uint64_t>(kDayNs) / arcs) {
    return kDayNs;
  }
  return ns_per_arc * static_cast<int64_t>(arcs);
}

SourceArcs MeasureSourceArcs(const McmfProblem& problem) {
  uint64_t sources = 0;
  for (const int64_t supply : problem.supply) sources += supply > 0 ? 1 : 0;
  if (sources == 0) return {};
  uint64_t arcs = 0;
  uint64_t free_arcs = 0;
  for (const McmfArc& arc : problem.arcs) {
    if (arc.capacity > 0 && problem.supply[arc.src] > 0) {
      ++arcs;
      free_arcs += arc.cost == 0 ? 1 : 0;
    }
  }
  if (arcs == 0) return {};
  return {
      .mean_degree = static_cast<double>(arcs) / static_cast<double>(sources),
      .zero_cost_share =
          static_cast<double>(free_arcs) / static_cast<double>(arcs)};
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
  absl::StatusOr<McmfSolution> scaled =
      absl::UnknownError("cost scaling did not run");
  // Set on the lane that runs them, read after the join.
  bool primal_dual_ran = false;
  bool relaxation_ran = false;
  bool scaling_ran = false;
  // A small network's shape is measured before the lanes start (it picks
  // the first); a larger one's only in the relaxation lane, on its own
  // core, and only if the degree rule needs it.
  const bool small = warm == nullptr && stagger_max_arcs > 0 &&
                     problem.arcs.size() <= stagger_max_arcs;
  const SourceArcs small_shape =
      small ? MeasureSourceArcs(problem) : SourceArcs{};
  auto skips_relaxation = [&] {
    if (!with_relaxation) return true;
    if (relaxation_min_source_degree <= 0) return false;
    const double degree = small ? small_shape.mean_degree
                                : MeasureSourceArcs(problem).mean_degree;
    return degree < relaxation_min_source_degree;
  };
  auto run_primal_dual = [&] {
    if (!with_primal_dual) return;
    ScratchIncremental incremental;
    incremental.set_stop_flag(stop);
    primal_dual_ran = true;
    primal_dual = incremental.Solve(problem);
    finish(primal_dual, 3);
  };
  // Relaxation, or past its budget the primal-dual: relaxation wins the
  // common case fast, and where it does not it rarely finishes at all. A
  // third thread would cost more: on two cores the scheduler lets two
  // racers share one core for the whole race.
  auto run_relaxation_lane = [&] {
    if (warm != nullptr) {
      Relaxation relaxation;
      relaxation.set_stop_flag(stop);
      relaxation_ran = true;
      relaxed = relaxation.SolveFrom(problem, {warm->flow, warm->potentials});
      finish(relaxed, 1);
      return;
    }
    if (skips_relaxation()) {
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
  };
  auto run_scaling_lane = [&] {
    CostScalingOptions options;
    options.stop = stop;
    scaling_ran = true;
    scaled = warm == nullptr ? CostScaling(options).Solve(problem)
                             : CostScaling(options).SolveFrom(
                                   problem, warm->flow, warm->potentials);
    finish(scaled, 2);
  };

  // The calling thread runs the first lane. The second waits `delay` or
  // until the first lane ends, whichever comes first, and then runs unless
  // a winner (or the caller) has set the stop flag.
  const bool staggered = small && (with_primal_dual || !skips_relaxation());
  const bool scaling_first =
      !staggered ||
      small_shape.zero_cost_share >= stagger_scaling_min_zero_cost_share;
  const std::chrono::nanoseconds delay(
      staggered ? StaggerDelayNs(stagger_delay_ns_per_arc, problem.arcs.size())
                : 0);
  std::mutex mu;
  std::condition_variable first_lane_ended;
  bool first_ended = false;
  std::thread second_lane([&] {
    if (delay.count() > 0) {
      std::unique_lock lock(mu);
      first_lane_ended.wait_for(lock, delay, [&] { return first_ended; });
    }
    if (stop->load()) return;
    if (scaling_first) {
      run_relaxation_lane();
    } else {
      run_scaling_lane();
    }
  });
  if (scaling_first) {
    run_scaling_lane();
  } else {
    run_relaxation_lane();
  }
  {
    std::lock_guard lock(mu);
    first_ended = true;
  }
  first_lane_ended.notify_one();
  second_lane.join();
  switch (winner.load()) {
    case 1:
      return relaxed;
    case 2:
      return scaled;
    case 3:
      return primal_dual;
    default:
      if (!primal_dual_ran && !relaxation_ran) return scaled.status();
      if (!scaling_ran) {
        return primal_dual_ran ? primal_dual.status() : relaxed.status();
      }
      return RaceLostStatus(scaled.status(), primal_dual_ran
                                                 ? primal_dual.status()
                                                 : relaxed.status());
  }
}

}  // namespace flowsched::solver
