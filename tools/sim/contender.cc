#include "tools/sim/contender.h"

#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/baselines/baseline_scheduler.h"
#include "services/common/clock.h"
#include "services/flow/flow_network.h"
#include "services/flow/network_builder.h"
#include "services/flow/placement_extractor.h"
#include "services/flow/scheduling_policy.h"
#include "services/solver/dimacs.h"
#include "services/solver/solver_registry.h"
#include "services/solver_worker/checked_extraction.h"
#include "services/solver_worker/incremental_mirror.h"

namespace flowsched::sim {
namespace {

double MillisSince(int64_t start_us) {
  return static_cast<double>(SteadyMicros() - start_us) / 1000.0;
}

class BaselineContender final : public Contender {
 public:
  explicit BaselineContender(std::unique_ptr<baselines::BaselineScheduler> s)
      : scheduler_(std::move(s)) {}
  absl::StatusOr<RoundDecisions> Decide(const cluster::ClusterState& state,
                                        const cluster::ChangeSet&,
                                        int64_t) override {
    RoundDecisions round;
    round.algorithm = std::string(scheduler_->name());
    const int64_t start = SteadyMicros();
    for (const auto& p : scheduler_->Schedule(state)) {
      round.decisions.push_back({p.task, MachineId(0), p.machine});
    }
    round.solve_ms = MillisSince(start);
    return round;
  }

 private:
  std::unique_ptr<baselines::BaselineScheduler> scheduler_;
};

// The graph manager's side (policy, network with recorded changes) and the
// solver worker's (replica network, IncrementalMirror or a one-shot
// solver, checker, extraction) in one object.
class FlowContender final : public Contender {
 public:
  FlowContender(std::unique_ptr<flow::SchedulingPolicy> policy,
                std::unique_ptr<solver::McmfSolver> solver, bool incremental,
                std::string export_dir, uint32_t export_rounds)
      : policy_(std::move(policy)),
        export_dir_(std::move(export_dir)),
        export_rounds_(export_rounds) {
    if (incremental) {
      mirror_ = std::make_unique<solver_worker::IncrementalMirror>(
          std::move(solver));
      network_.set_record_changes(true);
    } else {
      solver_ = std::move(solver);
    }
  }

  absl::StatusOr<RoundDecisions> Decide(const cluster::ClusterState& state,
                                        const cluster::ChangeSet& changes,
                                        int64_t now_us) override {
    RoundDecisions round;
    const flow::SyncContext context{now_us};
    int64_t start = SteadyMicros();
    if (auto s = policy_->Sync(changes, state, context, builder_); !s.ok()) {
      return s;
    }
    if (policy_->time_dependent()) {
      if (auto s = policy_->Refresh(state, context, builder_); !s.ok()) return s;
    }
    round.sync_ms = MillisSince(start);

    start = SteadyMicros();
    const flow::FlowNetwork* solved = &network_;
    solver::McmfProblem& problem = result_.problem;
    solver::McmfSolution& solution = result_.solution;
    solver::McmfOutcome outcome = solver::McmfOutcome::kInfeasible;
    // As in the solver worker: the mirror's export and flow per slot are
    // made on the check's and the extraction's threads.
    solver_worker::IncrementalMirror::DeferredInputs inputs;
    if (mirror_) {
      for (const flow::GraphChange& change : network_.TakeChanges()) {
        if (auto s = mirror_->Apply(change, replica_); !s.ok()) return s;
      }
      if (auto s = mirror_->SolveWithoutExport(result_); !s.ok()) return s;
      round.algorithm = result_.algorithm;
      outcome = result_.outcome;
      inputs = mirror_->InputsOf(replica_, result_, flow_by_slot_);
      solved = &replica_;
    } else {
      std::vector<flow::ArcSlot> slots;
      network_.ExportProblem(problem, slots);
      auto solved_now = solver_->Solve(problem);
      if (!solved_now.ok()) return solved_now.status();
      solution = std::move(*solved_now);
      round.algorithm = solution.algorithm;
      outcome = solution.outcome;
      if (solution.outcome == solver::McmfOutcome::kOptimal) {
        flow_by_slot_.assign(network_.arc_slot_count(), 0);
        for (size_t i = 0; i < slots.size(); ++i) {
          flow_by_slot_[slots[i]] += solution.flow[i];
        }
      }
    }
    round.solve_ms = MillisSince(start);
    if (outcome != solver::McmfOutcome::kOptimal) {
      if (inputs.check) inputs.check();  // the export, for --export-rounds
      if (auto s = Export(problem); !s.ok()) return s;
      return absl::InternalError("the network is infeasible");
    }

    solver_worker::CheckedPlacements checked = solver_worker::CheckAndExtract(
        problem, solution, *solved, flow_by_slot_, inputs.check,
        inputs.extract);
    round.check_ms = checked.check_ms;
    round.extract_ms = checked.extract_ms;
    round.check_extract_ms = checked.wall_ms;
    // The mirror's export is complete only now.
    if (auto s = Export(problem); !s.ok()) return s;
    if (!checked.verdict.ok()) return checked.verdict;
    for (const flow::TaskPlacement& p : checked.placements) {
      if (p.machine_id == p.running_on) continue;
      round.decisions.push_back({TaskId(p.task_id), MachineId(p.running_on),
                                 MachineId(p.machine_id)});
    }
    return round;
  }

 private:
  // Writes the network of each of the first export_rounds_ rounds.
  absl::Status Export(const solver::McmfProblem& problem) {
    ++rounds_;
    if (export_dir_.empty() || rounds_ > export_rounds_) return absl::OkStatus();
    const std::string path =
        absl::StrCat(export_dir_, "/round-", rounds_, ".dimacs");
    std::ofstream out(path);
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
    return solver::WriteDimacs(
        problem, out,
        absl::StrCat("flowsched simulate: ", std::string(policy_->name()),
                     " round ", rounds_));
  }

  std::unique_ptr<flow::SchedulingPolicy> policy_;
  std::string export_dir_;
  uint32_t export_rounds_ = 0;
  uint32_t rounds_ = 0;
  flow::FlowNetwork network_;
  flow::NetworkBuilder builder_{network_};
  std::unique_ptr<solver::McmfSolver> solver_;
  std::unique_ptr<solver_worker::IncrementalMirror> mirror_;
  flow::FlowNetwork replica_;
  // The last round's problem, solution and flow per slot, kept so that the
  // next round exports into buffers that are already mapped.
  solver_worker::MirrorResult result_;
  std::vector<int64_t> flow_by_slot_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Contender>> MakeContender(
    const std::string& name, const std::string& solver,
    const std::string& export_dir, uint32_t export_rounds) {
  if (name.rfind("flow:", 0) == 0) {
    auto policy = flow::MakePolicy(name.substr(5));
    if (!policy.ok()) return policy.status();
    const bool incremental = solver == "incremental";
    auto algorithm = solver::MakeSolver(
        incremental ? std::string(solver::kDefaultSolver) : solver);
    if (!algorithm.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(algorithm.status().message(), " or 'incremental'"));
    }
    return std::make_unique<FlowContender>(std::move(*policy),
                                           std::move(*algorithm), incremental,
                                           export_dir, export_rounds);
  }
  auto baseline = baselines::MakeBaseline(name);
  if (!baseline.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        baseline.status().message(), "; or flow:<policy>"));
  }
  return std::make_unique<BaselineContender>(std::move(*baseline));
}

AppliedDecisions ApplyDecisions(
    const RoundDecisions& round, cluster::ClusterState& state, int64_t now_us,
    cluster::ChangeSet& changes,
    const std::function<int64_t(TaskId)>& started_at) {
  AppliedDecisions applied;
  std::vector<const Decision*> migrations;
  for (const Decision& d : round.decisions) {
    if (d.from.value() != 0 && d.to.value() == 0) {
      if (state.Preempt(d.task, now_us, changes).ok()) {
        ++applied.preempted;
        applied.preempted_tasks.push_back(d.task);
      } else {
        ++applied.stale;
      }
    } else if (d.from.value() != 0 && d.to.value() != 0) {
      migrations.push_back(&d);
    }
  }
  // As GraphManager::ApplyDecisions: a migration into a machine another
  // migration of the round leaves is retried until no more succeed (a
  // chain resolves; a cycle of full machines stays stale).
  bool progress = true;
  while (progress && !migrations.empty()) {
    progress = false;
    std::vector<const Decision*> left;
    for (const Decision* d : migrations) {
      if (state.Migrate(d->task, d->from, d->to, now_us, changes).ok()) {
        ++applied.migrated;
        applied.placed.emplace_back(d->task, d->to);
        progress = true;
      } else {
        left.push_back(d);
      }
    }
    migrations = std::move(left);
  }
  applied.stale += migrations.size();
  for (const Decision& d : round.decisions) {
    if (d.from.value() != 0 || d.to.value() == 0) continue;
    const int64_t start_us = started_at ? started_at(d.task) : now_us;
    if (state.Place(d.task, d.to, start_us, changes).ok()) {
      applied.placed.emplace_back(d.task, d.to);
    } else {
      ++applied.stale;
    }
  }
  return applied;
}

}  // namespace flowsched::sim
