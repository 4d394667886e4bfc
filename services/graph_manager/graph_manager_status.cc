// GraphManager: what it reports: status.json (BuildStatus, written at
// status_interval_ms) and the metric gauges.

#include <unistd.h>

#include <algorithm>

#include "services/graph_manager/graph_manager.h"
#include "spdlog/spdlog.h"

namespace flowsched::graph_manager {

v1::GraphManagerStatus GraphManager::BuildStatus() const {
  v1::GraphManagerStatus s;
  s.set_epoch(meta_.epoch());
  s.set_policy(policy_network_.spec());
  s.set_machines(state_.machines().size());
  s.set_total_slots(state_.total_slots());
  s.set_jobs(state_.jobs().size());
  s.set_tasks(state_.tasks().size());
  s.set_tasks_running(state_.running_task_count());
  s.set_tasks_waiting(state_.waiting_task_count());
  s.set_tasks_submitted(meta_.tasks_submitted());
  s.set_events_applied(meta_.events_applied());
  s.set_events_rejected(meta_.events_rejected());
  s.set_rounds_published(rounds_published_);
  s.set_rounds_completed(meta_.rounds_completed());
  s.set_rounds_timed_out(rounds_timed_out_);
  s.set_snapshots_published(snapshots_published_);
  s.set_decisions_applied(meta_.decisions_applied());
  s.set_decisions_stale(meta_.decisions_stale());
  s.set_network_nodes(network_.node_count());
  s.set_network_arcs(network_.arc_count());
  s.set_round_in_flight(rounds_.in_flight() != nullptr);
  SummarizeTimings(solve_ms_, *s.mutable_solve());
  SummarizeTimings(round_trip_ms_, *s.mutable_round_trip());
  s.set_updated_time_us(clock_.NowMicros());
  s.set_pid(::getpid());
  s.set_digest_at_start(digest_at_start_);
  s.set_digest_at_stop(digest_at_stop_);
  s.set_solver_epoch(meta_.solver_epoch());
  s.set_results_fenced(collector_.fenced_records());
  s.set_results_duplicate(collector_.duplicate_records() +
                          placements_redelivered_);
  s.set_ledger_pending(ledger_->pending());
  s.set_dead_letters_pending(dead_letters_->pending());
  s.set_role(standby() ? "standby" : "active");
  return s;
}

bool GraphManager::standby() const {
  return fenced_by_epoch_.has_value() || (lease_ != nullptr && !lease_->held());
}

void GraphManager::UpdateMetricGauges() {
  if (!metrics_) return;
  const auto waiting = static_cast<uint64_t>(state_.waiting_task_count());
  const uint64_t unscheduled = std::min(waiting, last_unscheduled_);
  metrics_->pending_unscheduled.Set(static_cast<double>(unscheduled));
  metrics_->pending_awaiting_round.Set(
      static_cast<double>(waiting - unscheduled));
  metrics_->outbox_ledger.Set(static_cast<double>(ledger_->pending()));
  metrics_->outbox_dead_letters.Set(
      static_cast<double>(dead_letters_->pending()));
  metrics_->epoch.Set(static_cast<double>(meta_.epoch()));
  metrics_->solver_epoch.Set(static_cast<double>(meta_.solver_epoch()));
  metrics_->active.Set(standby() ? 0 : 1);
  for (const auto& [key, next] : next_offsets_) {
    auto marks = consumer_->CachedWatermarks(key.first, key.second);
    if (!marks.ok()) continue;  // not fetched from yet
    const int64_t consumed = next >= 0 ? next : marks->first;
    metrics_->consumer_lag.Set(key.first, key.second,
                               std::max<int64_t>(0, marks->second - consumed));
  }
}

void GraphManager::MaybeWriteStatus(bool force) {
  const int64_t now = SteadyMicros();
  if (!force && now - last_status_steady_us_ <
                    int64_t{options_.status_interval_ms} * 1000) {
    return;
  }
  last_status_steady_us_ = now;
  UpdateMetricGauges();
  absl::Status written =
      WriteStatusFile(options_.data_dir + "/status.json", BuildStatus());
  if (!written.ok()) spdlog::warn("{}", written.ToString());
}

}  // namespace flowsched::graph_manager
