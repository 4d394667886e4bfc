// GraphManager: rounds. Network sync and policy switching, cutting and
// publishing a round (with backoff and timeouts), and applying a complete
// answer's decisions to the state (core::ApplyRound), recorded in
// the ledger.

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "flowsched/v1/placements.pb.h"
#include "flowsched/v1/rounds.pb.h"
#include "services/codec/decision_codec.h"
#include "services/codec/gang_codec.h"
#include "services/codec/round_parts.h"
#include "services/common/status_macros.h"
#include "services/core/gang_requirements.h"
#include "services/core/round_apply.h"
#include "services/graph_manager/graph_manager.h"
#include "services/graph_manager/graph_manager_timeouts.h"
#include "services/graph_manager/state_persister.h"
#include "services/metrics/decision_kind.h"
#include "spdlog/spdlog.h"

namespace flowsched::graph_manager {
namespace {

// Bounds the timing history kept for status reports.
constexpr size_t kMaxTimings = 10'000;

double Seconds(int64_t micros) { return static_cast<double>(micros) / 1e6; }

void PushTiming(std::vector<double>& values, double value) {
  if (values.size() >= kMaxTimings) {
    values.erase(values.begin(), values.begin() + kMaxTimings / 2);
  }
  values.push_back(value);
}

}  // namespace

void GraphManager::ApplyDecisions(cluster::ChangeSet& changes) {
  const v1::RoundComplete& summary = collector_.complete_summary();
  v1::RoundApplied* round = batch_ledger_.add_steps()->mutable_round();
  round->set_round_id(summary.round_id());
  round->set_graph_epoch(summary.graph_epoch());
  const int64_t apply_start_us = SteadyMicros();
  // Its times, before applying it ends the round.
  const InFlightRound* in_flight = rounds_.in_flight();
  const int64_t started_us =
      in_flight != nullptr ? in_flight->started_steady_us : apply_start_us;
  const int64_t sent_us =
      in_flight != nullptr ? in_flight->sent_steady_us : apply_start_us;
  ApplyRound(collector_.complete_decisions(), *round, changes);
  const int64_t applied_us = SteadyMicros();
  if (metrics_) {
    metrics_->phase_apply.Observe(Seconds(applied_us - apply_start_us));
    metrics_->round_duration.Observe(Seconds(applied_us - started_us));
  }
  last_unscheduled_ = summary.tasks_unscheduled();
  // No worker claimed the rounds yet (a store from before fencing): the
  // one whose answer was applied is current.
  if (solver_epoch() == WorkerEpoch()) {
    meta_.set_solver_epoch(summary.epoch());
    collector_.set_solver_epoch(solver_epoch());
  }
  const double latency_ms =
      static_cast<double>(SteadyMicros() - sent_us) / 1000.0;
  PushTiming(solve_ms_, summary.solve_ms());
  PushTiming(round_trip_ms_, latency_ms);
  spdlog::info(
      "round {} applied: {} decisions ({} stale), cost {}, solve {:.2f} ms "
      "({}), round trip {:.2f} ms",
      summary.round_id(), round->applied(), round->stale(),
      summary.total_cost(), summary.solve_ms(), summary.algorithm(),
      latency_ms);
}

void GraphManager::ApplyRound(std::vector<v1::PlacementDecision> decisions,
                              v1::RoundApplied& out,
                              cluster::ChangeSet& batch_changes) {
  std::vector<core::Decision> domain;
  domain.reserve(decisions.size());
  for (const v1::PlacementDecision& d : decisions) {
    domain.push_back(codec::DecodeDecision(d));
  }
  cluster::ChangeSet changes;
  const core::AppliedRound round =
      core::ApplyRound(domain, state_, StateNowMicros(), changes);
  // Outcomes in the order applied, for the ledger (consumers learn there
  // which decisions did not take effect; a replay applies them in it).
  out.clear_decisions();
  for (const core::DecisionOutcome& outcome : round.outcomes) {
    v1::LedgerDecision* entry = out.add_decisions();
    *entry->mutable_decision() = std::move(decisions[outcome.index]);
    entry->set_applied(outcome.applied);
    // The devices the state chose, for the agents that bind them (a
    // replayed ledger copy carries the original's: chosen again, the same).
    entry->mutable_decision()->clear_device_indices();
    entry->mutable_decision()->clear_device_milli();
    for (const cluster::DeviceShare& share : outcome.devices) {
      entry->mutable_decision()->add_device_indices(share.index);
      entry->mutable_decision()->add_device_milli(share.milli);
    }
    if (metrics_ && !replaying_) {
      const core::Decision& decision = domain[outcome.index];
      metrics_->CountDecision(metrics::KindOf(decision.action),
                              outcome.applied);
      if (outcome.applied && decision.action == core::Action::kPlace) {
        metrics_->event_to_placement.Observe(Seconds(outcome.waited_us));
      }
    }
    if (!outcome.applied) {
      entry->set_stale_reason(outcome.stale_reason);
      spdlog::debug("decision {} not applied: {}",
                    entry->decision().idempotency_key(), outcome.stale_reason);
    }
  }
  const uint64_t applied = round.applied;
  const uint64_t stale = round.stale;
  SyncNowIfDeterministic(changes);
  batch_changes.Merge(changes);
  meta_.set_decisions_applied(meta_.decisions_applied() + applied);
  meta_.set_decisions_stale(meta_.decisions_stale() + stale);
  meta_.set_rounds_completed(meta_.rounds_completed() + 1);
  meta_.set_last_applied_round_id(out.round_id());
  // Deterministic modes: a round that changed the state is followed by
  // another right away, at the same place in the log; otherwise events
  // flow again.
  rounds_.OnApplied(/*changed_state=*/applied > 0);
  out.set_applied(applied);
  out.set_stale(stale);
}

absl::Status GraphManager::SwitchPolicy(const std::string& name) {
  const std::string previous = policy_network_.spec();
  // The removals and additions are recorded, so the RocksDB batch stores
  // the new network; the solver gets a snapshot, smaller than that diff.
  absl::Status switched =
      policy_network_.SwitchPolicy(name, state_, StateNowMicros());
  if (!switched.ok()) {
    // The decoder checked the name with the same registry.
    return absl::InternalError(
        absl::StrCat("switching to policy ", name, ": ", switched.message()));
  }
  meta_.set_policy(policy_network_.spec());
  rounds_.RequireSnapshot();
  ++policy_switches_;
  spdlog::info(
      "policy switched from {} to {}: network rebuilt with {} nodes "
      "and {} arcs",
      previous, policy_network_.spec(), network_.node_count(),
      network_.arc_count());
  return absl::OkStatus();
}

absl::Status GraphManager::SyncNetwork(const cluster::ChangeSet& changes) {
  if (!requested_policy_.empty()) {
    const std::string name = std::move(requested_policy_);
    requested_policy_.clear();
    return SwitchPolicy(name);
  }
  // Every cut refreshes first (RefreshPrices), so work whose cost does not
  // follow the batch waits for the next round instead of every batch.
  return policy_network_.Sync(changes, state_, StateNowMicros(),
                              /*refresh_follows=*/true);
}

void GraphManager::SyncNowIfDeterministic(const cluster::ChangeSet& changes) {
  if (!options_.deterministic() || !sync_error_.ok()) return;
  const int64_t start_us = SteadyMicros();
  sync_error_ = SyncNetwork(changes);
  rounds_.AddSyncMicros(SteadyMicros() - start_us);
}

void GraphManager::CheckRoundTimeout() {
  const int64_t now_us = SteadyMicros();
  if (!rounds_.TimedOut(now_us, options_.round_timeout_ms)) return;
  const InFlightRound& round = *rounds_.in_flight();
  spdlog::warn(
      "round {} got no complete answer in {} ms; re-cutting as a "
      "snapshot",
      round.id.value(), (now_us - round.sent_steady_us) / 1000);
  ++rounds_timed_out_;
  collector_.Clear();
  // None of its parts is needed again, so the next commit stores the full
  // placements offsets.
  rounds_.Abandon();
}

absl::StatusOr<std::vector<flow::GraphChange>> GraphManager::RefreshPrices() {
  // Time-dependent parts of the network (Quincy's wait and run costs; the
  // shape-reserving policies' first offer to a gang waiting past its age)
  // are brought up to date right before the cut, with what the batches'
  // syncs left to it (SyncNetwork: the room reservations). Only when a
  // round is due anyway: re-pricing alone never triggers a round, which
  // would otherwise follow round after round while anything waits
  // (deterministic runs add Ticks for that).
  FLOWSCHED_RETURN_IF_ERROR(policy_network_.Refresh(state_, StateNowMicros()));
  return network_.TakeChanges();
}

v1::SolverRound GraphManager::RoundHeader(RoundId round_id,
                                          bool snapshot) const {
  v1::SolverRound header;
  header.set_round_id(round_id.value());
  header.set_epoch(epoch().value());
  header.set_snapshot(snapshot);
  header.set_base_round_id(meta_.last_published_round_id());
  header.set_cut_time_us(clock_.NowMicros());
  header.set_deterministic(options_.deterministic());
  header.set_solver_epoch(solver_epoch().value());
  codec::EncodeGangs(
      core::GangRequirementsOf(state_, StateNowMicros(),
                               options_.gang_hold_after_ms * 1000),
      header);
  return header;
}

absl::Status GraphManager::CommitCut(
    RoundId round_id, bool snapshot,
    const std::vector<flow::GraphChange>& refreshed, int64_t started_us) {
  // Write-ahead: the round is durable as in flight before any part leaves,
  // so a restart after a crash in the middle still accepts its results
  // (which consumers may already act on) instead of orphaning them. Its id
  // is used up either way, so a partly published round is never mistaken
  // for its successor.
  meta_.set_next_round_id(round_id.value() + 1);
  rounds_.Cut(round_id, epoch(), started_us);
  // The ledger records the cut (and its time) so that a replay re-prices
  // at the same moment.
  v1::LedgerRecord cut;
  cut.mutable_cut()->set_round_id(round_id.value());
  cut.mutable_cut()->set_snapshot(snapshot);
  storage::StateBatch batch;
  StageNetwork(refreshed, network_, batch);
  // The new round holds no placements offset yet; offsets released since
  // the last commit (a timed-out round) are stored with it.
  StagePlacementOffsets(batch);
  std::optional<OutboxEntry> staged = StageLedger(cut, batch);
  StageMetaWithTime(batch);
  FLOWSCHED_RETURN_IF_ERROR(store_->Commit(std::move(batch)));
  if (staged) ledger_->Publish(std::move(*staged));
  return absl::OkStatus();
}

absl::Status GraphManager::PublishRoundParts(
    const std::vector<v1::SolverRound>& parts) {
  absl::Status sent;
  for (size_t i = 0; i < parts.size() && sent.ok(); ++i) {
    sent = producer_->Produce(options_.topics.rounds, 0, "round",
                              parts[i].SerializeAsString());
  }
  if (sent.ok()) {
    sent = producer_->Flush(kFlushTimeoutMs);
    OnProducerFlushed(sent.ok());
  }
  return sent;
}

absl::Status GraphManager::MaybeCutRound() {
  // An owed refresh alone is no reason to cut: every change the room
  // reservations follow (tasks, machines coming and going) changes the
  // network too, and a fresh process's first round is a snapshot anyway.
  if (!rounds_.CutDue(!pending_changes_.empty(), SteadyMicros())) {
    return absl::OkStatus();
  }
  const int64_t started_us = SteadyMicros();
  batch_time_us_ = clock_.NowMicros();
  FLOWSCHED_ASSIGN_OR_RETURN(const std::vector<flow::GraphChange> refreshed,
                             RefreshPrices());
  pending_changes_.insert(pending_changes_.end(), refreshed.begin(),
                          refreshed.end());

  const RoundId round_id(meta_.next_round_id());
  const bool snapshot = rounds_.need_snapshot();
  const v1::SolverRound header = RoundHeader(round_id, snapshot);
  const std::vector<flow::GraphChange> snapshot_changes =
      snapshot ? network_.SnapshotChanges() : std::vector<flow::GraphChange>{};
  const std::vector<flow::GraphChange>& changes =
      snapshot ? snapshot_changes : pending_changes_;
  const std::vector<v1::SolverRound> parts =
      codec::SplitRound(header, changes, options_.max_round_record_bytes);
  FLOWSCHED_RETURN_IF_ERROR(
      CommitCut(round_id, snapshot, refreshed, started_us));
  const absl::Status sent = PublishRoundParts(parts);
  if (!sent.ok()) {
    // The solver may have some parts or none; a snapshot next time is safe
    // either way. Back off so a broker outage is not hammered.
    spdlog::warn("publishing round {} failed, retrying in {} ms: {}",
                 round_id.value(), rounds_.publish_backoff_ms(),
                 sent.ToString());
    pending_changes_.clear();
    // Parts may have reached the broker: keep listening for this round's
    // results until it times out, like any round in flight.
    rounds_.OnPublished(/*ok=*/false, SteadyMicros());
    ExpectRound(round_id, epoch());
    return absl::OkStatus();
  }
  const int64_t sync_us = rounds_.TakeSyncMicros();
  if (metrics_) {
    metrics_->phase_publish.Observe(Seconds(SteadyMicros() - started_us));
    metrics_->phase_sync.Observe(Seconds(sync_us));
  }
  if (snapshot) ++snapshots_published_;
  ++rounds_published_;
  spdlog::debug("published round {} ({} with {} changes in {} records)",
                round_id.value(), snapshot ? "snapshot" : "delta",
                changes.size(), parts.size());
  pending_changes_.clear();
  rounds_.OnPublished(/*ok=*/true, SteadyMicros());
  ExpectRound(round_id, epoch());
  // Bookkeeping only (the base of the next delta); committed with the next
  // batch. Losing it to a crash is harmless: a restart sends a snapshot.
  meta_.set_last_published_round_id(round_id.value());
  return absl::OkStatus();
}

void GraphManager::ExpectRound(RoundId round_id, GraphEpoch graph_epoch) {
  collector_.Expect(round_id, graph_epoch,
                    static_cast<uint32_t>(placement_partitions_));
}

void GraphManager::StagePlacementOffsets(storage::StateBatch& batch) const {
  const InFlightRound* in_flight = rounds_.in_flight();
  for (const auto& [key, offset] : next_offsets_) {
    if (key.first != options_.topics.placements) continue;
    int64_t stored = offset;
    if (in_flight != nullptr) {
      auto held = in_flight->held_placement_offsets.find(key.second);
      if (held != in_flight->held_placement_offsets.end()) {
        stored = held->second;
      }
    }
    batch.SetOffset(key.first, key.second, stored);
  }
}

}  // namespace flowsched::graph_manager
