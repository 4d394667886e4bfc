#pragma once

// The incremental solver's repair run on a whole problem at once, as an
// McmfSolver ("incremental"): every node and arc is new, so its first
// Solve is a primal-dual run from zero flow (Ahuja, Magnanti and Orlin,
// section 9.8): multi-root Dijkstra phases on reduced costs, each followed
// by a maximum flow over the zero-reduced-cost arcs it settled. On the
// scheduling policies' own networks this beats cost scaling by far: a
// Quincy time-0 population has one sink and 146,250 tasks at their own
// distances from it, which one backward search prices at once
// (measurements in docs/2026-11-27-solver-measurements.md, "The
// primal-dual from scratch").
//
// Deterministic. OutOfRange also when node_count * max|cost| exceeds 2^59,
// the repair's potential bound (4x tighter than the interface's 2^61, so
// only past 2^29 nodes at the largest costs; the portfolio's other racers
// cover that range).

#include <atomic>
#include <string_view>

#include "absl/status/statusor.h"
#include "services/solver/incremental_solver.h"
#include "services/solver/mcmf_solver.h"

namespace flowsched::solver {

class ScratchIncremental final : public McmfSolver {
 public:
  explicit ScratchIncremental(IncrementalOptions options = {})
      : options_(options) {}

  absl::StatusOr<McmfSolution> Solve(const McmfProblem& problem) override;
  std::string_view name() const override { return "incremental"; }

  // A portfolio race's stop flag: checked between phases and every few
  // thousand nodes or arcs inside them; a stopped solve returns Cancelled.
  void set_stop_flag(const std::atomic<bool>* stop) { stop_ = stop; }

 private:
  IncrementalOptions options_;
  const std::atomic<bool>* stop_ = nullptr;
};

}  // namespace flowsched::solver
