#pragma once

// Keeps a solver::IncrementalSolver in step with the solver worker's replica
// of the flow network, so each round re-optimises only what changed
// (Firmament section 5) instead of solving 1-2 million arcs from scratch.
//
// Node ids are the network's node ids. Each arc slot of the network owns
// one solver handle per convex piece; handles are recycled through a free
// list so solver arrays stay dense. A change re-sends a whole arc, but only
// the pieces whose capacity or cost differ from the replica's reach the
// solver, and a piece of capacity 0 is kept out of it: load spreading opens
// and closes fixed-cost slot pieces (load_spreading_policy.h), so a start
// or finish is one arc removed from or added to the solver. The first Solve
// after a snapshot is the incremental solver's primal-dual from zero flow,
// raced against cost scaling from scratch (whose optimum, if it wins, is
// installed so that later rounds repair from it); when the incremental
// solver gives up (e.g. potentials near overflow) the Solve falls back to a
// cold start by a one-shot solver on the exported problem, installed
// likewise.
//
// Thread-safety: none; owned by the solver worker loop.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/flow/flow_network.h"
#include "services/flow/incremental_placements.h"
#include "services/solver/incremental_certificate.h"
#include "services/solver/incremental_solver.h"
#include "services/solver/mcmf_solver.h"

namespace flowsched::core {

struct MirrorResult {
  solver::McmfOutcome outcome = solver::McmfOutcome::kInfeasible;
  int64_t total_cost = 0;
  std::string algorithm;  // "incremental" or the from-scratch winner
  // The exported problem and solution, in handle order: a from-scratch
  // solve's input, or for DIMACS dumps and tests (a repaired round is
  // certified without it). Valid only once `exported` is true
  // (IncrementalMirror::ExportResult).
  solver::McmfProblem problem;
  solver::McmfSolution solution;
  std::vector<uint32_t> handles;
  bool exported = false;
  // Frees the export's buffers (exported becomes false): a round that is
  // not dumped needs them only while it races.
  void ReleaseExport() {
    problem = {};
    solution.flow = {};
    solution.potentials = {};
    handles = {};
    exported = false;
  }
};

struct MirrorOptions {
  // How long the incremental repair runs alone before the from-scratch
  // portfolio joins the race (0: at once). A round the repair finishes
  // within it pays neither the export of the whole problem nor the CPU the
  // racers take; a longer one loses at most the delay. The default's
  // measurements are in docs/ (docs/README.md lists the notes).
  int64_t race_delay_us = 200'000;
  // Once a solve from scratch has been timed (a cold start, or a race it
  // won), a positive race delay is raised to this share of its expected
  // time on the current network (time per arc then, times the arcs now):
  // a repair that finishes sooner wins the race anyway, and racers only
  // take CPU, memory and an export from it. The price: a repair that would
  // take longer than the whole solve from scratch is bounded by about 1.5
  // times it instead of delay + 1 times (measured in docs/). 0: the delay
  // stays as set.
  double race_after_scratch_share = 0.5;
  // Only solves of networks with at least this many arcs are timed: a
  // small network's time is mostly fixed costs, which per arc would
  // overstate a large one's many times over.
  size_t race_timed_min_arcs = 100'000;
  // Certify reads and checks everything once this many rounds and at
  // least full_check_min_interval_us have passed since it last did, so
  // that a slip in the certificate's own bookkeeping cannot last
  // (solver::IncrementalCertificate::CertifyAll). The interval keeps the
  // full pass, which costs O(network), rare in time when rounds are fast.
  uint32_t full_check_every = 256;
  int64_t full_check_min_interval_us = 60'000'000;
  // The first solve after a Reset (every node and arc new, no flow) is
  // the incremental solver's own primal-dual from zero flow, run in place
  // and raced against the portfolio's cost scaling on the export: no
  // second copy of the network for the portfolio's primal-dual, and no
  // installation of its flow when the in-place solve wins. False: the
  // cold solver on the export, its optimum installed.
  bool first_solve_in_place = true;
};

class IncrementalMirror {
 public:
  explicit IncrementalMirror(std::unique_ptr<solver::McmfSolver> cold_solver,
                             MirrorOptions options = {});

  // Drops all state: the next changes rebuild the network from empty.
  void Reset();
  // Applies one change to `network` and to the solver. Errors leave the
  // mirror unusable until Reset (the worker then asks for a snapshot).
  absl::Status Apply(const flow::GraphChange& change,
                     flow::FlowNetwork& network);
  // Solves the current network and exports problem and solution: the
  // first solve after a Reset in place, raced at once against cost scaling
  // (MirrorOptions::first_solve_in_place); later ones by the incremental
  // repair, raced after MirrorOptions::race_delay_us against the portfolio
  // solving from scratch (first to finish wins). When the repair gives up
  // (potentials near overflow, or a first solve that failed), the same
  // Solve falls back to a cold start by the cold solver.
  absl::StatusOr<MirrorResult> Solve();
  // The same into `result`, reusing its buffers: a caller that keeps one
  // MirrorResult across rounds exports the network without allocating.
  absl::Status Solve(MirrorResult& result);
  // Solve without the export when the repair wins (a from-scratch solve
  // exports first, as its input): a round needs none (Certify), a DIMACS
  // dump or a test completes `result` with ExportResult.
  absl::Status SolveWithoutExport(MirrorResult& result);
  // Exports the last solve into `result` unless it already holds it.
  void ExportResult(MirrorResult& result) const;
  // Flow per arc slot of `network` (pieces summed), read from `result`,
  // this mirror's last Solve result (it must hold the export). For tests
  // and tools; rounds read the certified copy (certified_flow_by_slot).
  void FlowBySlot(const flow::FlowNetwork& network, const MirrorResult& result,
                  std::vector<int64_t>& flow_by_slot) const;
  // Guarantee 6 for the last optimal solve (`result`), at the cost of what
  // it changed: the solver's reported flows and potentials go into the
  // certificate, which has its own copy of the network
  // (solver::IncrementalCertificate), and what changed is checked; every
  // MirrorOptions::full_check_every rounds, after a cold start or a race
  // won from scratch, and whenever the changed part fails, everything is
  // read from the solver and all of it checked. OK: the certified copy is
  // feasible and optimal, and certified_flow_by_slot() is its flow per
  // slot of `network` (pieces summed), what placements must be read from;
  // after a failed Certify, or once changes are applied, it holds values
  // nobody checked (until the next passed Certify). Whenever everything
  // was read from the solver, the flow per slot and its bits are checked
  // against the copy.
  absl::Status Certify(const MirrorResult& result,
                       const flow::FlowNetwork& network);
  [[nodiscard]] const std::vector<int64_t>& certified_flow_by_slot() const {
    return flow_by_slot_;
  }
  // Bit s set iff certified_flow_by_slot()[s] > 0 (ExtractPlacements'
  // slots_with_flow).
  [[nodiscard]] const std::vector<uint64_t>& certified_slots_with_flow() const {
    return slots_with_flow_;
  }
  // What changed in the network and in certified_flow_by_slot() since the
  // log was last cleared (flow::IncrementalPlacements::Update clears it):
  // every slot whose flow moved with its tail, every node added, updated
  // or removed; `everything` after a Reset, a round that read everything
  // from the solver, or a log grown longer than the network.
  [[nodiscard]] flow::FlowChangeLog& flow_changes() { return flow_changes_; }
  struct CertifyStats {
    bool full = false;        // everything was read and checked
    bool report_gap = false;  // the changed part failed, everything passed
    uint64_t arcs_checked = 0;
  };
  [[nodiscard]] const CertifyStats& last_certify() const {
    return last_certify_;
  }
  // The race delay the next repair would get (see MirrorOptions).
  [[nodiscard]] int64_t race_delay_us() const { return RaceDelayUs(); }
  // Arc pieces handed to the solver since construction: what the changes
  // really cost it (a re-sent piece with its old values is not handed on).
  [[nodiscard]] uint64_t pieces_sent() const { return pieces_sent_; }

 private:
  // Installs a one-shot solution so later rounds repair from it.
  absl::Status Install(const MirrorResult& result);
  // Exports the network into `result` and races the repair (in `repaired`)
  // against the portfolio from scratch on it. On a `first_solve` the
  // repair is the primal-dual from zero flow, so the portfolio runs cost
  // scaling alone. True when the portfolio won: its optimum is in `result`
  // and installed.
  absl::StatusOr<bool> RaceFromScratch(
      MirrorResult& result, bool first_solve,
      absl::StatusOr<solver::IncrementalResult>& repaired);
  // The repair alone, stopped at the race delay: true if it finished
  // (`repaired` holds its result or error), false if the delay ran out
  // first (the solver keeps a consistent pseudoflow to resume from).
  bool RepairAlone(absl::StatusOr<solver::IncrementalResult>& repaired,
                   int64_t delay_us);
  // MirrorOptions::race_delay_us, raised by race_after_scratch_share.
  [[nodiscard]] int64_t RaceDelayUs() const;
  // Records a solve from scratch of `arcs` arcs that took `micros`
  // (MirrorOptions::race_timed_min_arcs).
  void TimeScratchSolve(size_t arcs, int64_t micros);
  double scratch_us_per_arc_ = 0;  // 0 until a solve from scratch is timed
  uint32_t AllocateHandle();
  absl::Status ReleaseSlot(flow::ArcSlot slot);

  std::unique_ptr<solver::McmfSolver> cold_solver_;
  MirrorOptions options_;
  std::unique_ptr<solver::IncrementalSolver> solver_;
  // One handle per piece position of an arc. A piece without capacity is
  // kept out of the solver (in_solver false): load spreading's closed slot
  // pieces would otherwise be most of the solver's arcs at high
  // utilisation, scanned by every Dijkstra and every from-scratch race.
  struct PieceHandle {
    uint32_t handle = 0;
    bool in_solver = false;
  };
  absl::Status RemovePiece(PieceHandle& piece);
  // Apply's kSetArc: only the pieces that changed reach the solver.
  absl::Status ApplySetArc(const flow::GraphChange& change,
                           flow::FlowNetwork& network);
  // Rounds that read everything: flow_by_slot_ and slots_with_flow_
  // against the sums of the certificate's flows. Internal naming the first
  // slot that differs, after rebuilding both from those sums.
  absl::Status CheckSlotFlows();
  // Most arcs are one piece: inline, so an arc costs no allocation here.
  std::vector<absl::InlinedVector<PieceHandle, 1>> slot_handles_;
  // The slot each handle was last given to (a free handle's is stale, but
  // only live handles are exported).
  std::vector<flow::ArcSlot> handle_slot_;
  std::vector<uint32_t> free_handles_;
  uint32_t next_handle_ = 0;
  bool cold_ = true;
  // Nothing solved since the Reset (MirrorOptions::first_solve_in_place).
  bool fresh_ = true;
  // The next Certify reads everything from the solver.
  bool read_all_next_ = false;
  uint64_t pieces_sent_ = 0;
  // The checker's side: its own copy of the network and solution, and the
  // flow per slot of that copy, kept up to date as its flows change.
  solver::IncrementalCertificate certificate_;
  solver::IncrementalSolver::SolutionChanges changes_;
  std::vector<int64_t> flow_by_slot_;
  std::vector<uint64_t> slots_with_flow_;
  uint32_t rounds_since_full_ = 0;
  int64_t last_full_us_ = 0;  // SteadyMicros() at the last full pass
  CertifyStats last_certify_;
  // Hands the certificate the solver's flow on `handle` (kept in
  // flow_by_slot_ and slots_with_flow_ too).
  void ReportFlow(uint32_t handle);
  // Adds `delta` to the slot's flow, keeping its bit, and logs the slot
  // with its tail (flow_changes_).
  void AddSlotFlow(flow::ArcSlot slot, int64_t delta, flow::NodeId tail);
  // Appends to flow_changes_ (a slot whose flow moved, kNoSlot for a node
  // change alone) unless everything is marked; marks everything once the
  // log outgrows the network.
  void LogChange(flow::ArcSlot slot, flow::NodeId node);
  static constexpr flow::ArcSlot kNoSlot = ~flow::ArcSlot{0};
  static constexpr size_t kLogSlack = 4096;
  flow::FlowChangeLog flow_changes_;
  void ResizeSlots(size_t slots);
  // Reads what the solver reported changed, or everything.
  void ReportChanges(bool everything);
};

}  // namespace flowsched::core
