#include "services/core/round_apply.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace flowsched::core {
namespace {

int Group(Action action) {
  switch (action) {
    case Action::kPreempt:
      return 0;
    case Action::kMigrate:
      return 1;
    case Action::kPlace:
      return 2;
    case Action::kUnspecified:
      break;
  }
  return 3;
}

// See round_apply.h: a gang left short by a stale placement of this round
// gives back the placements of this round that did apply.
void WithdrawBrokenGangs(std::span<const Decision> decisions,
                         cluster::ClusterState& state, int64_t now_us,
                         cluster::ChangeSet& changes, AppliedRound& round) {
  std::set<JobId> broken;
  for (const DecisionOutcome& outcome : round.outcomes) {
    const Decision& d = decisions[outcome.index];
    if (outcome.applied || d.action != Action::kPlace) continue;
    const cluster::Task* task = state.FindTask(d.task);
    const cluster::Job* job = task ? state.FindJob(task->job) : nullptr;
    if (job == nullptr || !job->gang()) continue;
    if (job->running < job->gang_need()) broken.insert(job->id);
  }
  if (broken.empty()) return;
  for (DecisionOutcome& outcome : round.outcomes) {
    const Decision& d = decisions[outcome.index];
    if (!outcome.applied || d.action != Action::kPlace) continue;
    const cluster::Task* task = state.FindTask(d.task);
    if (task == nullptr || !broken.contains(task->job)) continue;
    // Placed just now by this round: taking it back cannot fail.
    state.Preempt(d.task, now_us, changes).IgnoreError();
    outcome.applied = false;
    outcome.stale_reason =
        absl::StrCat("gang ", task->job.value(),
                     " stays whole: another member's placement was stale");
    outcome.devices.clear();
    outcome.waited_us = 0;
    --round.applied;
    --round.placed;
    ++round.stale;
  }
}

// Applies one decision to `state`; the cluster's code if it is stale.
absl::Status ApplyDecisionToState(const Decision& d,
                                  cluster::ClusterState& state, int64_t now_us,
                                  cluster::ChangeSet& changes,
                                  const StartTimeFn& start_time) {
  switch (d.action) {
    case Action::kPlace:
      return state.Place(d.task, d.machine,
                         start_time ? start_time(d.task) : now_us, changes,
                         d.devices);
    case Action::kPreempt:
      return state.Preempt(d.task, now_us, changes);
    case Action::kMigrate:
      return state.Migrate(d.task, d.previous, d.machine, now_us, changes);
    case Action::kUnspecified:
      break;
  }
  return absl::InvalidArgumentError("decision without action");
}

// Marks `outcome` applied (with the task's devices and, for a placement,
// its wait) and counts it in `round`.
void RecordApplied(std::span<const Decision> decisions,
                   const cluster::ClusterState& state, Action action,
                   DecisionOutcome& outcome, AppliedRound& round) {
  outcome.applied = true;
  outcome.stale_reason.clear();
  if (action != Action::kPreempt) {
    if (const cluster::Task* task =
            state.FindTask(decisions[outcome.index].task)) {
      outcome.devices = task->devices;
      if (action == Action::kPlace) {
        outcome.waited_us = task->start_time_us - task->wait_start_us;
      }
    }
  }
  ++round.applied;
  round.placed += action == Action::kPlace;
  round.preempted += action == Action::kPreempt;
  round.migrated += action == Action::kMigrate;
}

}  // namespace

AppliedRound ApplyRound(std::span<const Decision> decisions,
                        cluster::ClusterState& state, int64_t now_us,
                        cluster::ChangeSet& changes,
                        const StartTimeFn& start_time) {
  std::vector<size_t> order(decisions.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(Group(decisions[a].action), decisions[a].task) <
           std::pair(Group(decisions[b].action), decisions[b].task);
  });

  AppliedRound round;
  round.outcomes.resize(order.size());
  const auto apply = [&](const Decision& d) {
    return ApplyDecisionToState(d, state, now_us, changes, start_time);
  };
  const auto succeeded = [&](DecisionOutcome& outcome, Action action) {
    RecordApplied(decisions, state, action, outcome, round);
  };

  // Positions (in `order`) of migrations that failed so far.
  std::vector<size_t> retry;
  const auto settle_migrations = [&]() {
    bool progress = true;
    while (progress && !retry.empty()) {
      progress = false;
      std::vector<size_t> left;
      for (size_t pos : retry) {
        absl::Status status = apply(decisions[order[pos]]);
        if (status.ok()) {
          succeeded(round.outcomes[pos], Action::kMigrate);
          progress = true;
        } else {
          round.outcomes[pos].stale_reason = std::string(status.message());
          left.push_back(pos);
        }
      }
      retry = std::move(left);
    }
    // Each keeps the reason of its last attempt (the target stays full,
    // or the task is gone or no longer where the decision says).
    round.stale += retry.size();
    retry.clear();
  };

  for (size_t pos = 0; pos < order.size(); ++pos) {
    const Decision& d = decisions[order[pos]];
    DecisionOutcome& outcome = round.outcomes[pos];
    outcome.index = order[pos];
    if (d.action != Action::kMigrate) settle_migrations();
    absl::Status status = apply(d);
    if (status.ok()) {
      succeeded(outcome, d.action);
    } else if (d.action == Action::kMigrate) {
      outcome.stale_reason = std::string(status.message());
      retry.push_back(pos);
    } else {
      ++round.stale;
      outcome.stale_reason = std::string(status.message());
    }
  }
  settle_migrations();
  WithdrawBrokenGangs(decisions, state, now_us, changes, round);
  return round;
}

}  // namespace flowsched::core
