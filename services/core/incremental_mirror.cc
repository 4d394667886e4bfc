#include "services/core/incremental_mirror.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/clock.h"
#include "services/common/status_macros.h"
#include "services/solver/portfolio.h"

namespace flowsched::core {
namespace {

// Gives the calling thread, and the threads it starts, a lower CPU
// priority (on Linux the nice value is per thread and inherited). The
// from-scratch racers call it: the repair they race wins almost every
// round it is raced in, and on two cores the three threads (repair,
// relaxation, cost scaling) shared them evenly, so the race cost the repair
// a third of its core (12,500 machines at 300x: solve 239-280 ms a round
// with the race, 216 ms without, 226-260 ms with the racers at nice 19, and
// placement p99 1.2-1.6 -> 1.0 s). At nice 10 a racer sharing a core with
// the repair gets ~10% of it (weights 110 against 1024) and the scheduler
// gives the repair a core to itself; 19 (~1.5%) would starve the racers,
// and with them the from-scratch bound on a stuck round, whenever other
// work shares the host. Raising one's own nice value needs no privilege; a
// failure only leaves the old sharing.
constexpr int kRacerNice = 10;
void YieldCpuToTheRepair() {
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)),
                    kRacerNice);
}

}  // namespace

IncrementalMirror::IncrementalMirror(
    std::unique_ptr<solver::McmfSolver> cold_solver, MirrorOptions options)
    : cold_solver_(std::move(cold_solver)), options_(options) {
  Reset();
}

void IncrementalMirror::Reset() {
  solver_ = std::make_unique<solver::IncrementalSolver>();
  slot_handles_.clear();
  handle_slot_.clear();
  free_handles_.clear();
  next_handle_ = 0;
  cold_ = true;
  fresh_ = true;
  read_all_next_ = false;
  certificate_.Clear();
  changes_ = {};
  flow_by_slot_.clear();
  slots_with_flow_.clear();
  rounds_since_full_ = 0;
  last_certify_ = {};
  flow_changes_.MarkEverything();
}

uint32_t IncrementalMirror::AllocateHandle() {
  if (!free_handles_.empty()) {
    const uint32_t handle = free_handles_.back();
    free_handles_.pop_back();
    return handle;
  }
  return next_handle_++;
}

absl::Status IncrementalMirror::ReleaseSlot(flow::ArcSlot slot) {
  if (slot >= slot_handles_.size()) return absl::OkStatus();
  for (PieceHandle& piece : slot_handles_[slot]) {
    FLOWSCHED_RETURN_IF_ERROR(RemovePiece(piece));
    free_handles_.push_back(piece.handle);
  }
  slot_handles_[slot].clear();
  return absl::OkStatus();
}

absl::Status IncrementalMirror::RemovePiece(PieceHandle& piece) {
  if (!piece.in_solver) return absl::OkStatus();
  piece.in_solver = false;
  const int64_t flow = certificate_.flow(piece.handle);
  const uint32_t tail = certificate_.arc_src(piece.handle);
  FLOWSCHED_RETURN_IF_ERROR(solver_->RemoveArc(piece.handle));
  FLOWSCHED_RETURN_IF_ERROR(certificate_.RemoveArc(piece.handle));
  AddSlotFlow(handle_slot_[piece.handle], -flow, tail);
  return absl::OkStatus();
}

absl::Status IncrementalMirror::ApplySetArc(const flow::GraphChange& change,
                                            flow::FlowNetwork& network) {
  // A change re-sends the whole arc; the pieces it had before let the
  // solver be told only about pieces that really changed. A piece left
  // alone keeps its flow and is not queued for repair, so a load
  // spreading start or finish (one slot piece flips its capacity) costs
  // the solver one arc, not the machine's whole arc.
  absl::InlinedVector<flow::ArcSegment, 2> before;
  FLOWSCHED_ASSIGN_OR_RETURN(
      const flow::ArcSlot slot,
      network.SetArcInSlot(change.src, change.dst, change.capacity, change.cost,
                           change.extra_segments, before));
  if (slot >= slot_handles_.size()) slot_handles_.resize(slot + 1);
  if (slot >= flow_by_slot_.size()) ResizeSlots(slot + 1);
  auto& handles = slot_handles_[slot];
  const size_t pieces = 1 + change.extra_segments.size();
  while (handles.size() > pieces) {
    FLOWSCHED_RETURN_IF_ERROR(RemovePiece(handles.back()));
    free_handles_.push_back(handles.back().handle);
    handles.pop_back();
  }
  // Handles beyond the old piece count are new to the solver.
  const size_t known = std::min(handles.size(), before.size());
  while (handles.size() < pieces) {
    const uint32_t handle = AllocateHandle();
    if (handle >= handle_slot_.size()) handle_slot_.resize(handle + 1);
    handle_slot_[handle] = slot;
    handles.push_back({handle});
  }
  for (size_t i = 0; i < pieces; ++i) {
    const flow::ArcSegment piece =
        i == 0 ? flow::ArcSegment{change.capacity, change.cost}
               : change.extra_segments[i - 1];
    if (i < known && before[i] == piece) continue;
    ++pieces_sent_;
    if (piece.capacity == 0) {
      // Cancels any flow, as a capacity of 0 would.
      FLOWSCHED_RETURN_IF_ERROR(RemovePiece(handles[i]));
      continue;
    }
    FLOWSCHED_RETURN_IF_ERROR(solver_->SetArc(
        handles[i].handle, change.src, change.dst, piece.capacity, piece.cost));
    FLOWSCHED_RETURN_IF_ERROR(certificate_.SetArc(
        handles[i].handle, change.src, change.dst, piece.capacity, piece.cost));
    handles[i].in_solver = true;
  }
  return absl::OkStatus();
}

absl::Status IncrementalMirror::Apply(const flow::GraphChange& change,
                                      flow::FlowNetwork& network) {
  using Type = flow::GraphChange::Type;
  switch (change.type) {
    case Type::kAddNode:
    case Type::kUpdateNode:
      FLOWSCHED_RETURN_IF_ERROR(network.Apply(change));
      LogChange(kNoSlot, change.node);
      FLOWSCHED_RETURN_IF_ERROR(
          solver_->SetSupply(change.node, change.data.supply));
      return certificate_.SetSupply(change.node, change.data.supply);
    case Type::kRemoveNode: {
      // Deltas list the node's arc removals first; a stray arc is removed
      // here all the same.
      std::vector<flow::ArcSlot> slots;
      auto collect = [&](const flow::ArcView& arc) {
        slots.push_back(arc.slot);
      };
      network.ForEachOutArc(change.node, collect);
      network.ForEachInArc(change.node, collect);
      for (flow::ArcSlot slot : slots)
        FLOWSCHED_RETURN_IF_ERROR(ReleaseSlot(slot));
      FLOWSCHED_RETURN_IF_ERROR(network.Apply(change));
      LogChange(kNoSlot, change.node);
      FLOWSCHED_RETURN_IF_ERROR(solver_->RemoveNode(change.node));
      return certificate_.RemoveNode(change.node);
    }
    case Type::kRemoveArc: {
      auto arc = network.FindArc(change.src, change.dst);
      if (arc.has_value()) FLOWSCHED_RETURN_IF_ERROR(ReleaseSlot(arc->slot));
      return network.Apply(change);
    }
    case Type::kSetArc:
      return ApplySetArc(change, network);
  }
  return absl::InvalidArgumentError("unknown graph change");
}

int64_t IncrementalMirror::RaceDelayUs() const {
  if (options_.race_delay_us <= 0) return 0;
  const size_t arcs = next_handle_ - free_handles_.size();
  const auto share_of_scratch =
      static_cast<int64_t>(scratch_us_per_arc_ * static_cast<double>(arcs) *
                           options_.race_after_scratch_share);
  return std::max(options_.race_delay_us, share_of_scratch);
}

void IncrementalMirror::TimeScratchSolve(size_t arcs, int64_t micros) {
  if (arcs == 0 || arcs < options_.race_timed_min_arcs) return;
  scratch_us_per_arc_ = static_cast<double>(micros) / static_cast<double>(arcs);
}

bool IncrementalMirror::RepairAlone(
    absl::StatusOr<solver::IncrementalResult>& repaired, int64_t delay_us) {
  std::atomic<bool> deadline{false};
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  std::thread timer([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::microseconds(delay_us),
                     [&] { return finished; })) {
      deadline.store(true);
    }
  });
  solver_->set_stop_flag(&deadline);
  repaired = solver_->Solve();
  solver_->set_stop_flag(nullptr);
  {
    std::lock_guard<std::mutex> lock(mu);
    finished = true;
  }
  cv.notify_one();
  timer.join();
  return !(repaired.status().code() == absl::StatusCode::kCancelled &&
           deadline.load());
}

absl::StatusOr<MirrorResult> IncrementalMirror::Solve() {
  MirrorResult result;
  FLOWSCHED_RETURN_IF_ERROR(Solve(result));
  return result;
}

absl::Status IncrementalMirror::Solve(MirrorResult& result) {
  FLOWSCHED_RETURN_IF_ERROR(SolveWithoutExport(result));
  ExportResult(result);
  return absl::OkStatus();
}

void IncrementalMirror::ExportResult(MirrorResult& result) const {
  if (result.exported) return;
  solver_->Export(result.problem, result.solution, result.handles);
  result.exported = true;
}

absl::StatusOr<bool> IncrementalMirror::RaceFromScratch(
    MirrorResult& result, bool first_solve,
    absl::StatusOr<solver::IncrementalResult>& repaired) {
  solver_->Export(result.problem, result.solution, result.handles);
  result.exported = true;
  std::atomic<bool> stop{false};
  absl::StatusOr<solver::McmfSolution> raced =
      absl::UnknownError("the portfolio did not run");
  int64_t raced_us = 0;
  std::thread racer([&] {
    YieldCpuToTheRepair();
    const int64_t start_us = SteadyMicros();
    solver::Portfolio portfolio(&stop);
    portfolio.with_primal_dual = !first_solve;
    // Relaxation from scratch stalls on a whole population waiting at once
    // (Portfolio's comment), which is what a first solve of a network of
    // high source degree is (Quincy's time-0 population: it never won, and
    // its workspace held 450 MB more at 50,000 machines); of low degree,
    // the portfolio skips it anyway.
    portfolio.with_relaxation = !first_solve;
    raced = portfolio.Solve(result.problem);
    raced_us = SteadyMicros() - start_us;
  });
  solver_->set_stop_flag(&stop);
  repaired = solver_->Solve();
  solver_->set_stop_flag(nullptr);
  if (repaired.ok()) stop.store(true);
  racer.join();
  // A repair stopped by the racer lost. On a first solve, a repair that
  // failed otherwise lost too: the racer, left to finish, answers instead.
  const bool repair_lost =
      !repaired.ok() &&
      (first_solve || repaired.status().code() == absl::StatusCode::kCancelled);
  if (!repair_lost || !raced.ok() ||
      raced->outcome != solver::McmfOutcome::kOptimal) {
    return false;
  }
  result.solution = std::move(*raced);
  result.outcome = result.solution.outcome;
  result.total_cost = result.solution.total_cost;
  result.algorithm = result.solution.algorithm;
  TimeScratchSolve(result.problem.arcs.size(), raced_us);
  FLOWSCHED_RETURN_IF_ERROR(Install(result));
  return true;
}

absl::Status IncrementalMirror::SolveWithoutExport(MirrorResult& result) {
  result.outcome = solver::McmfOutcome::kInfeasible;
  result.total_cost = 0;
  result.algorithm.clear();
  // Every path below exports before solving from scratch (set there) or
  // leaves the repair's result to ExportResult.
  result.exported = false;
  const bool in_place = cold_ && fresh_ && options_.first_solve_in_place;
  fresh_ = false;
  if (!cold_ || in_place) {
    absl::StatusOr<solver::IncrementalResult> repaired =
        absl::UnknownError("the repair did not run");
    const int64_t start_us = SteadyMicros();
    const int64_t delay_us = in_place ? 0 : RaceDelayUs();
    if (delay_us <= 0 || !RepairAlone(repaired, delay_us)) {
      // Portfolio (Firmament section 6.1): the repair (resumed from where
      // the delay stopped it) and the relaxation / cost scaling portfolio
      // from scratch; the first to finish wins and stops the others. The
      // from-scratch algorithms bound the round when changes ripple
      // through the whole network.
      FLOWSCHED_ASSIGN_OR_RETURN(const bool raced_won,
                                 RaceFromScratch(result, in_place, repaired));
      if (raced_won) return absl::OkStatus();
    }
    if (repaired.ok()) {
      result.outcome = repaired->outcome;
      result.total_cost = repaired->total_cost;
      result.algorithm = "incremental";
      // The race above may have exported the state the repair resumed
      // from; the repaired flow is exported by ExportResult.
      result.exported = false;
      if (in_place) {
        // A solve from scratch: timed as one, and read and checked whole.
        TimeScratchSolve(result.problem.arcs.size(), SteadyMicros() - start_us);
        read_all_next_ = true;
        cold_ = false;
      }
      return absl::OkStatus();
    }
    // A first solve in place falls back to the cold solver whatever went
    // wrong: returning the error would make the worker resync, and the
    // next first solve would run in place again.
    if (!in_place &&
        repaired.status().code() != absl::StatusCode::kOutOfRange &&
        repaired.status().code() != absl::StatusCode::kCancelled) {
      return repaired.status();
    }
    cold_ = true;  // potentials drifted too far, or both failed: start over
  }
  const int64_t cold_start_us = SteadyMicros();
  solver_->Export(result.problem, result.solution, result.handles);
  result.exported = true;
  FLOWSCHED_ASSIGN_OR_RETURN(result.solution,
                             cold_solver_->Solve(result.problem));
  TimeScratchSolve(result.problem.arcs.size(), SteadyMicros() - cold_start_us);
  result.outcome = result.solution.outcome;
  result.total_cost = result.solution.total_cost;
  result.algorithm = std::string(cold_solver_->name());
  if (result.outcome != solver::McmfOutcome::kOptimal) return absl::OkStatus();
  FLOWSCHED_RETURN_IF_ERROR(Install(result));
  return absl::OkStatus();
}

absl::Status IncrementalMirror::Install(const MirrorResult& result) {
  std::vector<int64_t> by_handle(next_handle_, 0);
  for (size_t i = 0; i < result.handles.size(); ++i) {
    by_handle[result.handles[i]] = result.solution.flow[i];
  }
  std::vector<int64_t> potentials = result.solution.potentials;
  potentials.resize(solver_->node_limit(), 0);
  FLOWSCHED_RETURN_IF_ERROR(solver_->InstallSolution(by_handle, potentials));
  cold_ = false;
  return absl::OkStatus();
}

void IncrementalMirror::FlowBySlot(const flow::FlowNetwork& network,
                                   const MirrorResult& result,
                                   std::vector<int64_t>& flow_by_slot) const {
  flow_by_slot.assign(network.arc_slot_count(), 0);
  const std::vector<int64_t>& flow = result.solution.flow;
  const size_t count = std::min(flow.size(), result.handles.size());
  for (size_t i = 0; i < count; ++i) {
    if (flow[i] == 0) continue;
    const uint32_t handle = result.handles[i];
    if (handle >= handle_slot_.size()) continue;
    const flow::ArcSlot slot = handle_slot_[handle];
    if (slot < flow_by_slot.size()) flow_by_slot[slot] += flow[i];
  }
}

void IncrementalMirror::ResizeSlots(size_t slots) {
  flow_by_slot_.resize(slots, 0);
  slots_with_flow_.resize((slots + 63) / 64, 0);
}

void IncrementalMirror::AddSlotFlow(flow::ArcSlot slot, int64_t delta,
                                    flow::NodeId tail) {
  if (delta == 0) return;
  flow_by_slot_[slot] += delta;
  LogChange(slot, tail);
  const uint64_t bit = uint64_t{1} << (slot % 64);
  if (flow_by_slot_[slot] > 0) {
    slots_with_flow_[slot / 64] |= bit;
  } else {
    slots_with_flow_[slot / 64] &= ~bit;
  }
}

void IncrementalMirror::LogChange(flow::ArcSlot slot, flow::NodeId node) {
  if (flow_changes_.everything) return;
  // A log longer than the network costs more to replay than a full
  // extraction (and deterministic rounds, which read no log, would grow it
  // without end).
  if (flow_changes_.nodes.size() > flow_by_slot_.size() + kLogSlack) {
    flow_changes_.MarkEverything();
    return;
  }
  if (slot != kNoSlot) flow_changes_.slots.push_back(slot);
  flow_changes_.nodes.push_back(node);
}

void IncrementalMirror::ReportFlow(uint32_t handle) {
  const int64_t before = certificate_.flow(handle);
  certificate_.SetFlow(handle, solver_->flow(handle));
  AddSlotFlow(handle_slot_[handle], certificate_.flow(handle) - before,
              certificate_.arc_src(handle));
}

void IncrementalMirror::ReportChanges(bool everything) {
  if (!everything) {
    for (uint32_t h : changes_.handles) {
      if (h < handle_slot_.size()) ReportFlow(h);
    }
    for (uint32_t v : changes_.nodes) {
      certificate_.SetPotential(v, solver_->potential(v));
    }
    return;
  }
  for (uint32_t h = 0; h < certificate_.handle_limit(); ++h) {
    if (certificate_.HandleLive(h)) ReportFlow(h);
  }
  for (uint32_t v = 0; v < certificate_.node_limit(); ++v) {
    certificate_.SetPotential(v, solver_->potential(v));
  }
}

absl::Status IncrementalMirror::Certify(const MirrorResult& result,
                                        const flow::FlowNetwork& network) {
  solver_->TakeChanges(changes_);
  last_certify_ = {};
  const int64_t now_us = SteadyMicros();
  const bool read_all =
      changes_.everything || std::exchange(read_all_next_, false) ||
      (++rounds_since_full_ >= options_.full_check_every &&
       now_us - last_full_us_ >= options_.full_check_min_interval_us);
  // Everything read: the placements are read in full too (marked first, so
  // that reading logs nothing).
  if (read_all) flow_changes_.MarkEverything();
  ReportChanges(read_all);
  absl::Status status = read_all ? certificate_.CertifyAll(result.total_cost)
                                 : certificate_.Certify(result.total_cost);
  last_certify_.arcs_checked = certificate_.last_arcs_checked();
  if (!status.ok() && !read_all) {
    // The solver's report may have missed a change: read everything.
    flow_changes_.MarkEverything();
    ReportChanges(true);
    status = certificate_.CertifyAll(result.total_cost);
    last_certify_.report_gap = status.ok();
    last_certify_.arcs_checked += certificate_.last_arcs_checked();
  }
  ResizeSlots(network.arc_slot_count());
  last_certify_.full = certificate_.last_full();
  if (last_certify_.full) {
    rounds_since_full_ = 0;
    last_full_us_ = now_us;
  }
  // When everything was read from the solver, the flow per slot and its
  // bits, kept step by step for the extraction, are checked against the
  // copy as well (not when the certificate chose a full pass itself: a
  // burst of such rounds would pay a second pass over the network each).
  if (status.ok() && (read_all || last_certify_.report_gap)) {
    status = CheckSlotFlows();
  }
  return status;
}

absl::Status IncrementalMirror::CheckSlotFlows() {
  std::vector<int64_t> sums(flow_by_slot_.size(), 0);
  for (uint32_t h = 0; h < certificate_.handle_limit(); ++h) {
    if (!certificate_.HandleLive(h)) continue;
    const flow::ArcSlot slot = h < handle_slot_.size() ? handle_slot_[h] : 0;
    if (h >= handle_slot_.size() || slot >= sums.size()) {
      return absl::InternalError(
          absl::StrCat("arc handle ", h, " has no arc slot of the network"));
    }
    sums[slot] += certificate_.flow(h);
  }
  absl::Status status;
  for (size_t slot = 0; slot < sums.size(); ++slot) {
    const bool bit = ((slots_with_flow_[slot / 64] >> (slot % 64)) & 1) != 0;
    if (status.ok() &&
        (sums[slot] != flow_by_slot_[slot] || bit != (sums[slot] > 0))) {
      status = absl::InternalError(absl::StrCat(
          "arc slot ", slot, ": kept flow ", flow_by_slot_[slot], " (bit ", bit,
          ") but the certified arcs carry ", sums[slot]));
    }
  }
  if (!status.ok()) {
    // This round fails; later ones read the copy's own sums.
    flow_by_slot_ = std::move(sums);
    flow_changes_.MarkEverything();
    std::fill(slots_with_flow_.begin(), slots_with_flow_.end(), 0);
    for (size_t slot = 0; slot < flow_by_slot_.size(); ++slot) {
      if (flow_by_slot_[slot] > 0) {
        slots_with_flow_[slot / 64] |= uint64_t{1} << (slot % 64);
      }
    }
  }
  return status;
}

}  // namespace flowsched::core
