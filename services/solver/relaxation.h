#pragma once

// The relaxation (dual ascent) min-cost flow method of Bertsekas and Tseng in
// the structure of their RELAX-IV code (Bertsekas & Tseng, "RELAX-IV: a faster
// version of the RELAX code", LIDS-P-2276, 1994). Firmament (OSDI 2016,
// section 4.2, figure 7) found it the fastest algorithm on scheduling networks
// whose tasks mostly have uncontested destinations, and its collapse under
// contention (figure 9) is why it should race cost scaling rather than
// replace it.

#include <atomic>
#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"
#include "services/solver/int128.h"
#include "services/solver/mcmf_problem.h"
#include "services/solver/mcmf_solver.h"

namespace flowsched::solver {

struct RelaxationOptions {
  // Passes over the queue of surplus nodes that run single-node iterations
  // only before multinode iterations may start (RELAX-IV uses 3). They route
  // most of the flow of uncontested scheduling networks on their own.
  int single_node_passes = 3;
  // Firmament section 5.3.1: when the multinode tree grows, nodes with an arc
  // towards a deficit node (machines and unscheduled aggregators, which feed
  // the sink) are scanned first, depth-first; the rest breadth-first.
  bool arc_prioritisation = true;
  // CPU time of the calling thread a solve may use, or 0 for no limit.
  // Past it, checked with the stop flag, the solve gives up with
  // DeadlineExceeded. The portfolio bounds relaxation this way: its wins
  // are fast and its losses hopeless (a whole Quincy population waiting:
  // over two minutes where the primal-dual needs one second).
  int64_t cpu_budget_ns = 0;
  // A solve that runs out of cpu_budget_ns with at most this fraction of
  // its initial positive surplus left gets the budget once more: a win
  // ends with a short tail of units, a loss keeps most of its surplus.
  // 0 never extends. Measurements: docs/2026-11-27-solver-measurements.md,
  // "In the portfolio".
  double extend_below_surplus_fraction = 0.01;
  // CPU time of a progress window, or 0 for none. From the end of the
  // second window on, a solve that removed less than a fifth of its
  // positive surplus in the last window gives up with DeadlineExceeded
  // (RelaxationStalled), unless it is within extend_below_surplus_fraction
  // of done: losses stall, wins do not. The portfolio uses an eighth of the
  // budget, at least 10 ms.
  int64_t stall_window_ns = 0;
  // Ask a max flow whether the problem is feasible before relaxing. Alone,
  // the method shows infeasibility by a cut certificate when it finds one,
  // or else by prices climbing towards the 2^61 guard, which can take
  // practically forever (flow circulating around positive cycles); so turn
  // this off only with a budget or a stop flag and someone else deciding
  // feasibility. The portfolio does: cost scaling runs the same check on
  // the other core, and past the budget the primal-dual takes over. On a
  // 200,000-node path (the primal-dual wins) relaxation's copy of the
  // check made the race 2.0 s instead of 1.0 s.
  bool check_feasibility = true;
};

// Whether a solve that has used its CPU budget gets it once more
// (RelaxationOptions::extend_below_surplus_fraction): `remaining` of the
// `initial` positive surplus is left.
bool ExtendRelaxationBudget(Int128 remaining, Int128 initial, double fraction);

// Whether a solve gives up as stalled (RelaxationOptions::stall_window_ns):
// `remaining` of the `initial` positive surplus is left, against
// `window_start` when the last window began; `fraction` is
// extend_below_surplus_fraction, below which a solve is nearly done.
bool RelaxationStalled(Int128 remaining, Int128 window_start, Int128 initial,
                       double fraction);

// Exact, deterministic min-cost flow for any problem ValidateProblem accepts.
// Maintains prices p and a flow in complementary slackness with them (rc =
// cost - p[src] + p[dst]; arcs with rc < 0 saturated, rc > 0 empty) and
// raises prices of node sets with positive ascent or augments along
// zero-reduced-cost paths until every surplus is gone, so the published
// potentials are the final prices and certify optimality exactly.
//
// Errors: InvalidArgument for invalid problems; OutOfRange when (node_count +
// 1) * max|cost| > 2^61, when one node's |supply| plus incident capacities
// exceeds 2^62, when a price would pass 2^61 (a run-time guard) or the
// optimal total cost does not fit int64; CancelledError when the stop flag is
// set; DeadlineExceeded past RelaxationOptions::cpu_budget_ns or when
// progress stalls (RelaxationOptions::stall_window_ns). kInfeasible
// (flow and potentials empty) comes from Solve's up-front max flow
// (CheckFeasibility, unless RelaxationOptions::check_feasibility is off) and,
// as a certificate during the run, from a node set with surplus and no
// residual arc leaving it.
//
// Solve keeps all work arrays local, so one instance may serve concurrent
// calls (they share the stop flag); set_stop_flag itself is not
// synchronised and belongs before the calls.
// Where a warm-started solve begins: the flow and potentials of a previous
// optimum of a network with the same node ids (McmfSolution convention),
// typically the last round's before this round's changes. Neither needs to
// fit the new problem: the flow is a hint, the potentials the real start.
struct RelaxationWarmStart {
  std::span<const int64_t> flow;        // per problem arc; shorter: 0
  std::span<const int64_t> potentials;  // per node; shorter: 0
};

class Relaxation final : public McmfSolver {
 public:
  Relaxation() = default;
  explicit Relaxation(RelaxationOptions options) : options_(options) {}

  absl::StatusOr<McmfSolution> Solve(const McmfProblem& problem) override;
  std::string_view name() const override { return "relaxation"; }

  // Relaxation as a repair engine: starts from `start`'s prices instead of
  // zero and from its flow wherever complementary slackness allows (an arc
  // with rc < 0 is saturated, rc > 0 emptied, rc == 0 keeps the hint
  // clamped to its capacity), so after a round that changed little only
  // the imbalances this leaves are routed. Prices are shifted to start at
  // 0; OutOfRange if their span exceeds 2^60 (re-solve from scratch then).
  // Skips the up-front max flow of Solve: an infeasible problem ends with a
  // cut certificate (kInfeasible) or at the price guard (OutOfRange), so
  // callers race it or fall back to Solve. The result is exact and carries
  // its own potentials, like Solve's.
  absl::StatusOr<McmfSolution> SolveFrom(const McmfProblem& problem,
                                         const RelaxationWarmStart& start);

  // Cooperative cancellation for a portfolio racing several solvers: while
  // `*stop` is true, Solve returns CancelledError within a few thousand
  // iterations. The flag must outlive the Solve calls; nullptr disables.
  void set_stop_flag(const std::atomic<bool>* stop) { stop_ = stop; }

 private:
  RelaxationOptions options_;
  const std::atomic<bool>* stop_ = nullptr;
};

}  // namespace flowsched::solver
