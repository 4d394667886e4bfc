#include "tools/sim/contender.h"

#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/baselines/baseline_scheduler.h"
#include "services/common/clock.h"
#include "services/core/gang_requirements.h"
#include "services/core/policy_network.h"
#include "services/core/round_solver.h"
#include "services/solver/dimacs.h"
#include "tools/sim/change_pipeline.h"

namespace flowsched::sim {
namespace {

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
      round.decisions.push_back({p.task, JobId(), p.machine, MachineId(),
                                 core::Action::kPlace, 0, p.devices});
    }
    round.solve_ms = SteadyMillisSince(start);
    return round;
  }

 private:
  std::unique_ptr<baselines::BaselineScheduler> scheduler_;
};

// The graph manager's side (core::PolicyNetwork, changes recorded) and the
// solver worker's (core::RoundSolver on a replica) in one object.
// Changes per mirrored chunk: a round recording fewer mirrors them inline
// after the sync; the time-0 population records millions.
constexpr size_t kMirrorChunk = 1 << 16;
class FlowContender final : public Contender {
 public:
  FlowContender(std::unique_ptr<core::RoundSolver> round_solver,
                std::string export_dir, uint32_t export_rounds)
      : round_solver_(std::move(round_solver)),
        export_dir_(std::move(export_dir)),
        export_rounds_(export_rounds) {
    policy_.network().set_record_changes(true);
    round_solver_->set_keep_problems(!export_dir_.empty() &&
                                     export_rounds_ > 0);
  }

  absl::Status Adopt(std::string_view policy) { return policy_.Adopt(policy); }

  absl::StatusOr<RoundDecisions> Decide(const cluster::ClusterState& state,
                                        const cluster::ChangeSet& changes,
                                        int64_t now_us) override {
    RoundDecisions round;
    int64_t start = SteadyMicros();
    // Mirroring the changes is the worker's part of the round; a large
    // delta is mirrored while it is recorded (ChangePipeline), and only
    // what is left after the sync counts in the solve.
    ChangePipeline mirror(policy_.network(), *round_solver_, kMirrorChunk);
    if (auto s = policy_.Sync(changes, state, now_us); !s.ok()) return s;
    if (auto s = policy_.Refresh(state, now_us); !s.ok()) return s;
    round.sync_ms = SteadyMillisSince(start);

    start = SteadyMicros();
    if (auto s = mirror.Finish(); !s.ok()) return s;
    const double mirror_ms = SteadyMillisSince(start);
    const std::vector<core::GangRequirement> gangs =
        core::GangRequirementsOf(state, now_us, core::kDefaultGangHoldAfterUs);
    core::SolvedRound solved =
        round_solver_->Solve(/*deterministic=*/false, gangs);
    round.algorithm = solved.algorithm;
    round.solve_ms = mirror_ms + solved.solve_ms;
    round.check_ms = solved.check_ms;
    round.extract_ms = solved.extract_ms;
    round.check_extract_ms = solved.check_extract_ms;
    if (auto s = Export(); !s.ok()) return s;
    if (!solved.verdict.ok()) return solved.verdict;
    round.decisions = std::move(solved.decisions);
    return round;
  }

 private:
  // Writes the network of each of the first export_rounds_ rounds.
  absl::Status Export() {
    ++rounds_;
    if (export_dir_.empty() || rounds_ > export_rounds_)
      return absl::OkStatus();
    const std::string path =
        absl::StrCat(export_dir_, "/round-", rounds_, ".dimacs");
    std::ofstream out(path);
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
    const solver::McmfProblem* problem = round_solver_->problem();
    if (problem == nullptr) {
      return absl::InternalError("the round's problem was not kept");
    }
    // The rounds after the last one exported need not keep their problem.
    if (rounds_ == export_rounds_) round_solver_->set_keep_problems(false);
    return solver::WriteDimacs(
        *problem, out,
        absl::StrCat("flowsched simulate: ",
                     std::string(policy_.policy().name()), " round ", rounds_));
  }

  core::PolicyNetwork policy_;
  std::unique_ptr<core::RoundSolver> round_solver_;
  std::string export_dir_;
  uint32_t export_rounds_ = 0;
  uint32_t rounds_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Contender>> MakeContender(
    const std::string& name, const std::string& solver,
    const std::string& export_dir, uint32_t export_rounds) {
  if (name.rfind("flow:", 0) == 0) {
    auto round_solver = core::RoundSolver::Create(solver);
    if (!round_solver.ok()) return round_solver.status();
    auto contender = std::make_unique<FlowContender>(std::move(*round_solver),
                                                     export_dir, export_rounds);
    if (auto s = contender->Adopt(name.substr(5)); !s.ok()) return s;
    return contender;
  }
  auto baseline = baselines::MakeBaseline(name);
  if (!baseline.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(baseline.status().message(), "; or flow:<policy>"));
  }
  return std::make_unique<BaselineContender>(std::move(*baseline));
}

std::vector<std::string> SplitContenderList(std::string_view list) {
  std::vector<std::string> names;
  size_t begin = 0;
  while (begin <= list.size()) {
    size_t end = list.find(',', begin);
    if (end == std::string_view::npos) end = list.size();
    const std::string_view piece = list.substr(begin, end - begin);
    begin = end + 1;
    if (piece.empty()) continue;
    const bool continues =
        !names.empty() && piece.find('=') != std::string_view::npos &&
        piece.rfind("flow:", 0) != 0 && names.back().rfind("flow:", 0) == 0;
    if (continues) {
      names.back().append(",").append(piece);
    } else {
      names.emplace_back(piece);
    }
  }
  return names;
}

std::unique_ptr<Contender> MakeBaselineContender(
    std::unique_ptr<baselines::BaselineScheduler> baseline) {
  return std::make_unique<BaselineContender>(std::move(baseline));
}

AppliedDecisions ApplyDecisions(const RoundDecisions& round,
                                cluster::ClusterState& state, int64_t now_us,
                                cluster::ChangeSet& changes,
                                const core::StartTimeFn& started_at) {
  const core::AppliedRound applied =
      core::ApplyRound(round.decisions, state, now_us, changes, started_at);
  AppliedDecisions out;
  out.preempted = applied.preempted;
  out.migrated = applied.migrated;
  out.stale = applied.stale;
  for (const core::DecisionOutcome& outcome : applied.outcomes) {
    if (!outcome.applied) continue;
    const core::Decision& d = round.decisions[outcome.index];
    if (d.action == core::Action::kPreempt) {
      out.preempted_tasks.push_back(d.task);
    } else {
      out.placed.emplace_back(d.task, d.machine);
    }
  }
  return out;
}

}  // namespace flowsched::sim
