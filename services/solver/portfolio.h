#pragma once

// Firmament's solver portfolio (OSDI 2016, section 6.1): relaxation is the
// fastest algorithm on scheduling networks in the common case but
// collapses under contention and oversubscription, where cost scaling
// stays robust; predicting which one wins depends on policy and load, so
// both run at once and the first to finish stops the other. From scratch
// relaxation gets a CPU budget (relaxation_budget_ns_per_arc), and past it
// the incremental solver's primal-dual (ScratchIncremental) takes over its
// core: on the Quincy policy's own networks, a whole population waiting at
// once, relaxation does not finish in minutes while the primal-dual is 8x
// faster than cost scaling (docs/2026-11-27-solver-measurements.md, "The
// primal-dual from scratch"). A network whose sources have few arcs each
// (relaxation_min_source_degree) is where relaxation stalls, so there the
// primal-dual races cost scaling. On a small network the race is
// staggered (stagger_max_arcs): the second racer slows the first more
// than it wins there, so it starts only if the first is slow or fails. The
// solution names the winner in `algorithm`.
//
// Not deterministic in which optimum it returns (the winner depends on
// timing): deterministic rounds use a single algorithm instead.

#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "services/solver/mcmf_solver.h"
#include "services/solver/relaxation.h"

namespace flowsched::solver {

// The arcs with capacity that leave nodes with positive supply: in a
// scheduling network, a task's choices (unscheduled, any machine, its
// preferred machines and racks). O(nodes + arcs).
struct SourceArcs {
  // Arcs per supply node, 0 without one.
  double mean_degree = 0;
  // The share of them that cost nothing, 0 without one: a task whose
  // choice of machine is free (load spreading's arc to its aggregator),
  // the price being on the aggregator's arcs that all tasks share.
  double zero_cost_share = 0;
};
SourceArcs MeasureSourceArcs(const McmfProblem& problem);

// The staggered second lane's delay for `arcs` arcs: ns_per_arc * arcs,
// 0 for a non-positive rate, and at most a day, so that a caller's huge
// rate ("only if the first lane fails") overflows neither int64 nor the
// clock.
int64_t StaggerDelayNs(int64_t ns_per_arc, uint64_t arcs);

class Portfolio final : public McmfSolver {
 public:
  // `race_stop`, if given, is shared with the caller's own racers: any of
  // them setting it stops this portfolio (Cancelled, or the error of a
  // racer that had already failed), and the portfolio sets it when one of
  // its algorithms finishes first.
  explicit Portfolio(std::atomic<bool>* race_stop = nullptr)
      : race_stop_(race_stop) {}

  // Relaxation's CPU budget from scratch: this many ns per arc, at least
  // relaxation_budget_min_ns; the default leaves every relaxation win on
  // the generated Quincy networks inside it
  // (docs/2026-11-27-solver-measurements.md). Tests shorten it.
  int64_t relaxation_budget_ns_per_arc = 300;
  int64_t relaxation_budget_min_ns = 10'000'000;
  // From scratch, a network whose supply nodes average fewer arcs than
  // this (SourceArcs::mean_degree) skips relaxation: its sources contend for a
  // few shared destinations, where relaxation stalls, so the primal-dual
  // takes that core at once (racing cost scaling from the start above
  // stagger_max_arcs). 0 always tries relaxation first.
  double relaxation_min_source_degree = 4.0;
  // From scratch, relaxation's core turns to the primal-dual when
  // relaxation is skipped or out of budget. A caller that runs the
  // primal-dual itself on the same network (IncrementalMirror's first
  // solve) turns it off: a second copy would repeat that work and hold the
  // whole network once more.
  bool with_primal_dual = true;
  // From scratch, relaxation gets its budget first. Off: it is skipped,
  // as on a network of low source degree (above).
  bool with_relaxation = true;
  // From scratch, a network of at most stagger_max_arcs arcs is solved by
  // the lane its shape favours alone; the other lane starts after
  // stagger_delay_ns_per_arc per arc (at most a day), or at once if the
  // first lane fails: on networks solved in a few milliseconds a second
  // racer slows the first (both fill fresh memory at once) by more than it
  // can win. Favoured: cost scaling when at least
  // stagger_scaling_min_zero_cost_share of the task arcs are free
  // (SourceArcs::zero_cost_share), else relaxation or the primal-dual as
  // above. stagger_max_arcs 0 races from the start at every size; a delay
  // of 0 keeps the favoured lane on the calling thread but starts both.
  uint64_t stagger_max_arcs = 100'000;
  int64_t stagger_delay_ns_per_arc = 400;
  double stagger_scaling_min_zero_cost_share = 0.25;

  absl::StatusOr<McmfSolution> Solve(const McmfProblem& problem) override;
  std::string_view name() const override { return "portfolio"; }

  // Firmament's incremental portfolio: relaxation and cost scaling start
  // from a previous optimum of a network with the same node and arc indexing
  // (relaxation from its prices and flow, Relaxation::SolveFrom; cost
  // scaling with price refinement, CostScaling::SolveFrom), so whichever
  // algorithm won the last round, the other resumes from its solution.
  // The result is as exact as Solve's.
  absl::StatusOr<McmfSolution> SolveFrom(
      const McmfProblem& problem, const std::vector<int64_t>& flow,
      const std::vector<int64_t>& potentials);

 private:
  struct WarmStart {
    const std::vector<int64_t>& flow;
    const std::vector<int64_t>& potentials;
  };
  // The from-scratch relaxation racer's options: no feasibility check (cost
  // scaling's), a CPU budget by arc count, and the stall window.
  RelaxationOptions RacingRelaxationOptions(const McmfProblem& problem) const;
  absl::StatusOr<McmfSolution> Race(const McmfProblem& problem,
                                    const WarmStart* warm);

  std::atomic<bool>* race_stop_;
};

}  // namespace flowsched::solver
