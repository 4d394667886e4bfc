#include "services/core/round_solver.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/clock.h"
#include "services/common/status_macros.h"
#include "services/core/checked_extraction.h"
#include "services/core/decision_builder.h"
#include "services/core/task_arc_blocker.h"
#include "services/solver/solver_registry.h"

namespace flowsched::core {
namespace {

// Arc slots and per-node arc lists depend on the history of changes that
// built a network; rebuilding with arcs in (source, destination) order makes
// the solver's input, its tie-breaking and the placements a function of the
// network alone.
flow::FlowNetwork CanonicalCopy(const flow::FlowNetwork& network) {
  std::vector<flow::GraphChange> changes = network.SnapshotChanges();
  auto first_arc = std::find_if(
      changes.begin(), changes.end(),
      [](const auto& c) { return c.type == flow::GraphChange::Type::kSetArc; });
  std::sort(first_arc, changes.end(), [](const auto& a, const auto& b) {
    return std::tie(a.src, a.dst) < std::tie(b.src, b.dst);
  });
  flow::FlowNetwork canonical;
  for (const flow::GraphChange& change : changes) {
    // Valid by construction: a snapshot of a valid network.
    canonical.Apply(change).IgnoreError();
  }
  return canonical;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RoundSolver>> RoundSolver::Create(
    std::string_view algorithm) {
  auto round_solver = std::unique_ptr<RoundSolver>(new RoundSolver());
  if (algorithm == kIncrementalRounds) {
    FLOWSCHED_ASSIGN_OR_RETURN(auto cold,
                               solver::MakeSolver(solver::kDefaultSolver));
    round_solver->mirror_ =
        std::make_unique<IncrementalMirror>(std::move(cold));
    // A race's winner depends on timing: deterministic rounds use one
    // fixed algorithm.
    FLOWSCHED_ASSIGN_OR_RETURN(
        round_solver->solver_,
        solver::MakeSolver(solver::kDeterministicSolver));
    return round_solver;
  }
  auto one_shot = solver::MakeSolver(algorithm);
  if (!one_shot.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(one_shot.status().message(), " or '",
                     std::string(kIncrementalRounds), "'"));
  }
  round_solver->solver_ = std::move(*one_shot);
  return round_solver;
}

absl::Status RoundSolver::Apply(const flow::GraphChange& change) {
  if (mirror_) return mirror_->Apply(change, network_);
  return network_.Apply(change);
}

void RoundSolver::Reset() {
  network_ = flow::FlowNetwork();
  if (mirror_) mirror_->Reset();
}

std::string_view RoundSolver::name() const {
  return mirror_ ? kIncrementalRounds : solver_->name();
}

SolvedRound RoundSolver::Solve(bool deterministic,
                               std::span<const GangRequirement> gangs) {
  SolvedRound round;
  flow::FlowNetwork canonical;
  if (deterministic) canonical = CanonicalCopy(network_);
  flow::FlowNetwork& solved = deterministic ? canonical : network_;
  // A gang with nothing left to place (need 0) can be neither partial nor
  // held: only the others make the passes read every task's placement.
  const bool enforce =
      std::any_of(gangs.begin(), gangs.end(),
                  [](const GangRequirement& gang) { return gang.need > 0; });
  SolvePass(solved, deterministic, /*all_tasks=*/enforce, round);
  if (round.verdict.ok() && enforce) {
    EnforceGangs(solved, deterministic, gangs, round);
  }
  if (!round.verdict.ok()) {
    round.tasks = round.tasks_placed = 0;
    return round;
  }
  round.decisions = BuildDecisions(solved, placements_);
  MarkGangDecisions(gangs, round.decisions);
  return round;
}

void RoundSolver::SolvePass(const flow::FlowNetwork& solved, bool deterministic,
                            bool all_tasks, SolvedRound& round) {
  ++round.passes;
  placements_.clear();
  solver::McmfProblem& problem = result_.problem;
  solver::McmfSolution& solution = result_.solution;
  solver::McmfOutcome outcome = solver::McmfOutcome::kInfeasible;
  const bool repair = mirror_ != nullptr && !deterministic;
  const int64_t start_us = SteadyMicros();
  absl::Status verdict;
  if (repair) {
    verdict = mirror_->SolveWithoutExport(result_);
    if (verdict.ok()) {
      outcome = result_.outcome;
      round.algorithm = result_.algorithm;
      // Kept whatever the outcome: an infeasible or refused round is the
      // one worth a dump.
      if (keep_problems_) {
        mirror_->ExportResult(result_);
      } else {
        // What a race exported is not needed any more; between races it
        // would hold a copy of the network (24 bytes an arc and more).
        result_.ReleaseExport();
      }
    } else {
      mirror_->Reset();
      round.replica_lost = true;
    }
  } else {
    std::vector<flow::ArcSlot> arc_slots;
    solved.ExportProblem(problem, arc_slots);
    absl::StatusOr<solver::McmfSolution> solved_now = solver_->Solve(problem);
    if (solved_now.ok()) {
      solution = std::move(*solved_now);
      outcome = solution.outcome;
      round.algorithm = solution.algorithm;
    } else {
      verdict = solved_now.status();
    }
    if (verdict.ok() && outcome == solver::McmfOutcome::kOptimal) {
      // Pieces of a convex arc share their slot.
      flow_by_slot_.assign(solved.arc_slot_count(), 0);
      for (size_t i = 0; i < arc_slots.size(); ++i) {
        flow_by_slot_[arc_slots[i]] += solution.flow[i];
      }
    }
  }
  round.solve_ms += SteadyMillisSince(start_us);
  round.verdict = std::move(verdict);
  if (!round.verdict.ok()) return;
  if (outcome != solver::McmfOutcome::kOptimal) {
    round.verdict =
        absl::InternalError("the network of the round is infeasible");
    return;
  }
  if (repair) {
    CertifyAndExtract(all_tasks, round);
    return;
  }
  CheckedPlacements checked =
      CheckAndExtract(problem, solution, solved, flow_by_slot_);
  round.check_ms += checked.check_ms;
  round.extract_ms += checked.extract_ms;
  round.check_extract_ms += checked.wall_ms;
  round.verdict = std::move(checked.verdict);
  if (!round.verdict.ok()) return;
  round.total_cost = solution.total_cost;
  round.extracted_in_full = true;
  placements_ = std::move(checked.placements);
  round.tasks = placements_.size();
  round.tasks_placed = static_cast<uint64_t>(
      std::count_if(placements_.begin(), placements_.end(),
                    [](const auto& p) { return p.machine_id != 0; }));
}

void RoundSolver::CertifyAndExtract(bool all_tasks, SolvedRound& round) {
  // The mirror's certificate checks what the repair changed against its
  // own copy (guarantee 6), and placements are read from that copy: one
  // step after the other, the check being the short one. Only what the
  // mirror logged since the last extraction is read again.
  const int64_t check_start = SteadyMicros();
  absl::Status certified = mirror_->Certify(result_, network_);
  round.check_ms += SteadyMillisSince(check_start);
  if (!certified.ok()) {
    round.verdict = std::move(certified);
    return;
  }
  const int64_t extract_start = SteadyMicros();
  absl::Status extracted = tracked_.Update(
      network_, mirror_->certified_flow_by_slot(),
      mirror_->certified_slots_with_flow(), mirror_->flow_changes());
  if (extracted.ok()) {
    placements_ = all_tasks ? tracked_.All(network_) : tracked_.moved();
    round.extracted_in_full = tracked_.last_full();
  }
  round.extract_ms += SteadyMillisSince(extract_start);
  round.check_extract_ms += SteadyMillisSince(check_start);
  if (!extracted.ok()) {
    round.verdict = std::move(extracted);
    return;
  }
  round.total_cost = result_.total_cost;
  round.tasks = tracked_.tasks();
  round.tasks_placed = tracked_.tasks_placed();
  if (verify_extraction_) round.verdict = VerifyExtraction();
}

absl::Status RoundSolver::VerifyExtraction() const {
  absl::StatusOr<std::vector<flow::TaskPlacement>> full =
      flow::ExtractPlacements(network_, mirror_->certified_flow_by_slot());
  if (!full.ok()) return full.status();
  const std::vector<flow::TaskPlacement> kept = tracked_.All(network_);
  if (kept.size() != full->size()) {
    return absl::InternalError(absl::StrCat(
        "kept placements list ", kept.size(), " tasks, not ", full->size()));
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    if (kept[i] == (*full)[i]) continue;
    return absl::InternalError(
        absl::StrCat("kept placement of task node ", kept[i].task_node,
                     " is machine ", kept[i].machine_id,
                     ", a full extraction gives ", (*full)[i].machine_id));
  }
  std::vector<flow::TaskPlacement> moved;
  for (const flow::TaskPlacement& p : *full) {
    if (p.machine_id != p.running_on) moved.push_back(p);
  }
  if (moved != tracked_.moved() ||
      tracked_.tasks_placed() !=
          static_cast<uint64_t>(
              std::count_if(full->begin(), full->end(),
                            [](const auto& p) { return p.machine_id != 0; }))) {
    return absl::InternalError(
        "kept moved tasks or placed count differ from a full extraction");
  }
  return absl::OkStatus();
}

void RoundSolver::EnforceGangs(flow::FlowNetwork& solved, bool deterministic,
                               std::span<const GangRequirement> gangs,
                               SolvedRound& round) {
  // One function of 111 lines on purpose: each pass chooses hold, release or
  // withdraw from state the passes share (the held gang, the room before the
  // hold, the blocker and the withdrawn set), so a split would pass it all.
  const TaskArcBlocker::ApplyFn apply =
      [this, &solved, deterministic](const flow::GraphChange& change) {
        return deterministic ? solved.Apply(change) : Apply(change);
      };
  // Blocking changes arcs only: task nodes, their order in the placements
  // and their jobs stay the same across passes.
  const std::vector<JobId> jobs = JobsOfPlacements(solved, placements_);
  const auto tasks_where = [&](const auto& of_job) {
    std::vector<flow::NodeId> nodes;
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (of_job(jobs[i])) nodes.push_back(placements_[i].task_node);
    }
    return nodes;
  };
  // Tasks of other jobs than `job` on machines, and those of them placed
  // now (0 while every other waiting task is blocked).
  const auto others = [&](JobId job) {
    GangTally count;
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (jobs[i] == job || placements_[i].machine_id == 0) continue;
      ++count.on_machines;
      count.placed_now += placements_[i].running_on == 0;
    }
    return count;
  };
  // The gang's tasks placed plus the room other waiting work took before
  // the hold: what the gang must absorb for holding to be of use.
  uint32_t room_before_hold = 0;
  bool hold_pass = false;  // the last pass was the hold's first
  const GangRequirement* hold = nullptr;
  for (const GangRequirement& gang : gangs) {
    if (gang.hold && gang.need > 0) {
      hold = &gang;
      break;
    }
  }
  TaskArcBlocker blocker;
  std::set<JobId> withdrawn;
  const size_t max_passes = gangs.size() + 3;
  absl::Status status;
  while (status.ok()) {
    std::map<JobId, GangTally> tally = TallyGangs(placements_, jobs, gangs);
    const bool hold_short = hold != nullptr && !Whole(*hold, tally[hold->job]);
    const bool absorbed_room =
        !hold_pass || tally[hold->job].placed_now >=
                          std::min(tally[hold->job].waiting, room_before_hold);
    hold_pass = false;
    if (hold_short && !round.held) {
      // Starved: the room is the gang's alone this round.
      round.held = true;
      room_before_hold =
          tally[hold->job].placed_now + others(hold->job).placed_now;
      hold_pass = true;
      status = blocker.Block(
          solved, tasks_where([&](JobId job) { return job != hold->job; }),
          apply);
    } else if (hold_short &&
               (others(hold->job).on_machines == 0 || !absorbed_room)) {
      // Holding would only idle the cluster: the gang had all the room and
      // does not fit, or it cannot use the room the others lost (the
      // network reserves that room for other request shapes). Released,
      // and withdrawn like any gang.
      round.held = false;
      withdrawn.insert(hold->job);
      hold = nullptr;
      status = blocker.Restore(apply);
      if (status.ok()) {
        status = blocker.Block(solved, tasks_where([&](JobId job) {
                                 return withdrawn.contains(job);
                               }),
                               apply);
      }
    } else {
      const std::vector<JobId> partial = PartialGangs(gangs, tally);
      if (partial.empty()) break;
      const std::vector<JobId> now =
          round.passes <= kSingleGangPasses
              ? std::vector<JobId>{GangToWithdraw(partial, gangs, tally)}
              : partial;
      withdrawn.insert(now.begin(), now.end());
      status = blocker.Block(solved, tasks_where([&](JobId job) {
                               return std::find(now.begin(), now.end(), job) !=
                                      now.end();
                             }),
                             apply);
    }
    if (!status.ok()) break;
    if (round.passes >= max_passes) {
      status = absl::InternalError(
          absl::StrCat("gangs still partial after ", round.passes, " passes"));
      break;
    }
    SolvePass(solved, deterministic, /*all_tasks=*/true, round);
    if (!round.verdict.ok()) break;
  }
  if (!status.ok()) round.verdict = std::move(status);
  round.gangs_withdrawn.assign(withdrawn.begin(), withdrawn.end());
  // The replica goes back to what the graph manager's changes made it.
  if (absl::Status restored = blocker.Restore(apply); !restored.ok()) {
    Reset();
    round.replica_lost = true;
    round.verdict = std::move(restored);
  }
}

}  // namespace flowsched::core
