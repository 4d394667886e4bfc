#include "services/graph_manager/graph_manager.h"

#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "flowsched/v1/placements.pb.h"
#include "services/common/status_macros.h"
#include "services/graph_manager/graph_manager_timeouts.h"
#include "services/graph_manager/state_digest.h"
#include "services/graph_manager/state_persister.h"
#include "services/graph_manager/state_rebuilder.h"
#include "spdlog/spdlog.h"

namespace flowsched::graph_manager {
namespace {

// Ledger records and dead letters are acknowledged (and their pending
// copies dropped) this often; a shorter flush keeps a broker outage from
// stalling the loop long.
constexpr int kOutboxFlushIntervalMs = 100;
constexpr int kOutboxFlushTimeoutMs = 2'000;

}  // namespace

GraphManager::GraphManager(GraphManagerOptions options, const Clock& clock,
                           bus::Bus* bus)
    : options_(std::move(options)),
      clock_(clock),
      metrics_(options_.metrics_registry != nullptr
                   ? std::make_unique<metrics::GraphManagerMetrics>(
                         *options_.metrics_registry)
                   : nullptr),
      decoder_(options_.limits,
               [](std::string_view name) {
                 return flow::MakePolicy(name).status();
               }),
      state_(options_.limits) {
  if (bus == nullptr) {
    bus::KafkaOptions kafka = options_.kafka;
    kafka.client_id = "flowsched-graph-manager";
    owned_bus_ = std::make_unique<bus::KafkaBus>(std::move(kafka));
    bus = owned_bus_.get();
  }
  bus_ = bus;
}

absl::StatusOr<std::unique_ptr<GraphManager>> GraphManager::Create(
    GraphManagerOptions options, const Clock& clock, bus::LeaderLease* lease) {
  return CreateOn(std::move(options), clock, nullptr, lease);
}

absl::StatusOr<std::unique_ptr<GraphManager>> GraphManager::Create(
    GraphManagerOptions options, const Clock& clock, bus::Bus& bus,
    bus::LeaderLease* lease) {
  return CreateOn(std::move(options), clock, &bus, lease);
}

absl::StatusOr<std::unique_ptr<GraphManager>> GraphManager::CreateOn(
    GraphManagerOptions options, const Clock& clock, bus::Bus* bus,
    bus::LeaderLease* lease) {
  if (options.data_dir.empty()) {
    return absl::InvalidArgumentError("graph manager needs a data directory");
  }
  auto manager =
      std::unique_ptr<GraphManager>(new GraphManager(options, clock, bus));
  manager->lease_ = lease;
  absl::Status opened = manager->Open();
  if (opened.ok()) return manager;
  if (!manager->damaged_store_) return opened;
  manager.reset();  // closes the store
  // Never deleted: the operator may want to look at it.
  const std::string dir = options.data_dir + "/state";
  FLOWSCHED_ASSIGN_OR_RETURN(const std::string moved, MoveAside(dir));
  spdlog::error(
      "THE STATE STORE {} IS DAMAGED ({}); moved it to {} and "
      "rebuilding the state from the topics",
      dir, opened.ToString(), moved);
  manager = std::unique_ptr<GraphManager>(
      new GraphManager(std::move(options), clock, bus));
  manager->lease_ = lease;
  FLOWSCHED_RETURN_IF_ERROR(manager->Open());
  FLOWSCHED_RETURN_IF_ERROR(manager->SalvagePendingLetters(moved));
  return manager;
}

absl::Status GraphManager::AssignInputs() {
  FLOWSCHED_ASSIGN_OR_RETURN(auto event_offsets,
                             store_->LoadOffsets(options_.topics.events));
  FLOWSCHED_ASSIGN_OR_RETURN(auto placement_offsets,
                             store_->LoadOffsets(options_.topics.placements));
  // Deterministic mode reads only partition 0: the order across partitions
  // is not part of the log, so a replay could not reproduce it.
  const int32_t consumed_event_partitions =
      options_.deterministic() ? 1 : event_partitions_;
  for (int32_t p = 0; p < consumed_event_partitions; ++p) {
    auto it = event_offsets.find(p);
    next_offsets_[{options_.topics.events, p}] =
        it == event_offsets.end() ? bus::kOffsetBeginning : it->second;
  }
  storage::StateBatch start_offsets;
  bool new_start_offsets = false;
  for (int32_t p = 0; p < placement_partitions_; ++p) {
    auto it = placement_offsets.find(p);
    int64_t offset = 0;
    if (it != placement_offsets.end()) {
      offset = it->second;
    } else {
      // Nothing applied yet: only results published from now on matter.
      // The starting point is stored at once: otherwise a restart before
      // the first answer on this partition would start at the new end and
      // skip the answers of a round still in flight.
      FLOWSCHED_ASSIGN_OR_RETURN(
          auto marks, consumer_->Watermarks(options_.topics.placements, p,
                                            kMetadataTimeoutMs));
      offset = marks.second;
      start_offsets.SetOffset(options_.topics.placements, p, offset);
      new_start_offsets = true;
    }
    next_offsets_[{options_.topics.placements, p}] = offset;
  }
  if (new_start_offsets) {
    FLOWSCHED_RETURN_IF_ERROR(store_->Commit(std::move(start_offsets)));
  }
  // The ledger is watched from here on for a higher epoch's claim.
  FLOWSCHED_ASSIGN_OR_RETURN(
      auto ledger_marks,
      consumer_->Watermarks(options_.topics.ledger, 0, kMetadataTimeoutMs));
  next_offsets_[{options_.topics.ledger, 0}] = ledger_marks.second;
  spdlog::info("consuming {} event and {} placement partitions{}",
               consumed_event_partitions, placement_partitions_,
               options_.deterministic() ? " (deterministic rounds)" : "");
  return SetEventsPaused(rounds_.EventsPaused());
}

absl::Status GraphManager::SetEventsPaused(bool paused) {
  std::vector<bus::TopicPartitionOffset> assignment;
  for (const auto& [key, offset] : next_offsets_) {
    if (paused && key.first == options_.topics.events) continue;
    assignment.push_back({key.first, key.second, offset});
  }
  events_paused_ = paused;
  return consumer_->Assign(assignment);
}

absl::Status GraphManager::Run(const std::atomic<bool>& stop) {
  MaybeWriteStatus(/*force=*/true);
  while (!stop.load()) FLOWSCHED_RETURN_IF_ERROR(RunOnce());
  Stop();
  return absl::OkStatus();
}

absl::Status GraphManager::RunOnce() {
  const std::vector<bus::Record> records = consumer_->PollOrBackOff(
      options_.max_batch_records, options_.poll_timeout_ms);
  if (!records.empty()) FLOWSCHED_RETURN_IF_ERROR(ProcessRecords(records));
  // Step down before publishing anything more.
  if (fenced_by_epoch_.has_value()) {
    MaybeWriteStatus(/*force=*/true);
    return absl::AbortedError(absl::StrCat(
        "fenced: the ledger shows epoch ", fenced_by_epoch_->value(),
        " claimed after this instance's epoch ", meta_.epoch()));
  }
  if (lease_ != nullptr && !lease_->Poll(0)) {
    MaybeWriteStatus(/*force=*/true);
    return absl::AbortedError("lost the leader lease");
  }
  CheckRoundTimeout();
  FLOWSCHED_RETURN_IF_ERROR(MaybeCutRound());
  FlushOutboxes(kOutboxFlushIntervalMs, kOutboxFlushTimeoutMs,
                /*idle=*/records.empty());
  MaybeWriteStatus(/*force=*/false);
  return absl::OkStatus();
}

void GraphManager::Stop() {
  // Best effort at exit; what the broker did not acknowledge stays pending
  // in the store, and the next start publishes it.
  OnProducerFlushed(producer_->Flush(kFlushTimeoutMs).ok());
  if (ledger_->unacknowledged() > 0 || dead_letters_->unacknowledged() > 0) {
    spdlog::warn(
        "stopping with {} ledger records and {} dead letters not "
        "acknowledged by the broker; the next start publishes them",
        ledger_->unacknowledged(), dead_letters_->unacknowledged());
  }
  digest_at_stop_ = StateDigest(state_, network_);
  spdlog::info("state digest at stop {}", digest_at_stop_);
  {
    // Lets the next start check that it restores this very state.
    meta_.set_clean_stop_digest(digest_at_stop_);
    storage::StateBatch batch;
    StageMetaWithTime(batch);
    absl::Status committed = store_->Commit(std::move(batch));
    if (!committed.ok()) spdlog::warn("at stop: {}", committed.ToString());
  }
  MaybeWriteStatus(/*force=*/true);
  spdlog::info("graph manager stopped");
}

bool GraphManager::TakeEventRecord(const bus::Record& record,
                                   cluster::ChangeSet& changes, bool& reseek) {
  // Records fetched before a pause, or from partitions deterministic
  // mode does not read, wait for their turn.
  auto next = next_offsets_.find({record.topic, record.partition});
  if (rounds_.EventsPaused() || next == next_offsets_.end()) return false;
  // A record fetched before a re-assignment may come again after it;
  // apply each offset once, in order.
  if (next->second >= 0 && record.offset != next->second) {
    if (record.offset > next->second) reseek = true;
    return false;
  }
  rounds_.OnEvent(ApplyEventRecord(record, changes));
  // The ledger keeps the exact interleaving: runs of one partition.
  const int n = batch_ledger_.steps_size();
  v1::EventRun* run = n > 0 && batch_ledger_.steps(n - 1).has_events()
                          ? batch_ledger_.mutable_steps(n - 1)->mutable_events()
                          : nullptr;
  if (run == nullptr || run->partition() != record.partition ||
      run->to_offset() != record.offset) {
    run = batch_ledger_.add_steps()->mutable_events();
    run->set_partition(record.partition);
    run->set_from_offset(record.offset);
  }
  run->set_to_offset(record.offset + 1);
  return true;
}

void GraphManager::TakePlacementRecord(const bus::Record& record,
                                       cluster::ChangeSet& changes) {
  // A part of the round in flight is only in memory until the round
  // completes: hold the stored offset at the first record read while
  // the round is in flight. Released as soon as it no longer is (this
  // record completed it, applied in this very batch, or a resync
  // request dropped it).
  // Within one process every record is handled once: a re-assignment
  // or a seek back delivers again what was read (a resync request read
  // twice would drop the round its snapshot started). After a restart
  // next_offsets_ starts at the stored, possibly held, offset.
  auto next = next_offsets_.find({record.topic, record.partition});
  if (next != next_offsets_.end() && record.offset < next->second) {
    ++placements_redelivered_;
    return;
  }
  rounds_.HoldPlacementOffset(record.partition, record.offset);
  HandlePlacementRecord(record, changes);
  next_offsets_[{record.topic, record.partition}] = record.offset + 1;
}

void GraphManager::WatchLedgerRecord(const bus::Record& record) {
  // Watched for other instances' epoch claims only; never stored.
  next_offsets_[{record.topic, record.partition}] = record.offset + 1;
  v1::LedgerRecord ledger;
  if (ledger.ParseFromString(record.value) && ledger.has_claim() &&
      GraphEpoch(ledger.claim().epoch()) > epoch()) {
    spdlog::warn(
        "epoch {} claimed by {}; this instance (epoch {}) "
        "steps down",
        ledger.claim().epoch(), ledger.claim().instance(), meta_.epoch());
    fenced_by_epoch_ = GraphEpoch(ledger.claim().epoch());
  }
}

absl::Status GraphManager::CheckEventsStillHeld() {
  for (const auto& [key, next] : next_offsets_) {
    if (key.first != options_.topics.events || next < 0) continue;
    const auto marks =
        consumer_->Watermarks(key.first, key.second, kMetadataTimeoutMs);
    if (!marks.ok()) {
      // Unknown now (a broker away): the re-seek goes ahead, and the next
      // record past the offset asks again.
      spdlog::warn("cannot check events {} [{}] for lost records: {}",
                   key.first, key.second, marks.status().ToString());
      continue;
    }
    if (marks->first > next) {
      return absl::DataLossError(absl::StrCat(
          "events ", key.first, " [", key.second, "] no longer holds offsets ",
          next, " to ", marks->first - 1,
          ": the broker deleted them before they were applied (the topic's "
          "retention must be infinite: services/bus/README.md); stopping "
          "rather than running without those events"));
    }
  }
  return absl::OkStatus();
}

absl::Status GraphManager::ProcessRecords(
    const std::vector<bus::Record>& records) {
  cluster::ChangeSet changes;
  storage::StateBatch batch;
  bool reseek = false;
  batch_time_us_ = clock_.NowMicros();
  batch_ledger_.Clear();
  batch_letters_.clear();
  staged_letters_.clear();
  for (const bus::Record& record : records) {
    if (record.topic == options_.topics.events) {
      if (!TakeEventRecord(record, changes, reseek)) continue;
      next_offsets_[{record.topic, record.partition}] = record.offset + 1;
      batch.SetOffset(record.topic, record.partition, record.offset + 1);
    } else if (record.topic == options_.topics.placements) {
      TakePlacementRecord(record, changes);
    } else if (record.topic == options_.topics.ledger) {
      WatchLedgerRecord(record);
    }
  }
  if (reseek) FLOWSCHED_RETURN_IF_ERROR(CheckEventsStillHeld());
  // The letters commit with the offsets that pass their records.
  StageDeadLetters(batch);
  // Every batch, not only those with placements records: a released hold
  // must reach the store even if no record of that partition came since.
  StagePlacementOffsets(batch);
  FLOWSCHED_RETURN_IF_ERROR(
      CommitChanges(changes, std::move(batch),
                    batch_ledger_.steps_size() > 0 ? &batch_ledger_ : nullptr));
  PublishStagedLetters();
  // Paused when this batch made a cut due, resumed when it applied a round
  // that changed nothing (deterministic modes).
  const bool pause = rounds_.EventsPaused();
  if (pause != events_paused_ || reseek) {
    FLOWSCHED_RETURN_IF_ERROR(SetEventsPaused(pause));
  }
  return absl::OkStatus();
}

bool GraphManager::ApplyEventRecord(const bus::Record& record,
                                    cluster::ChangeSet& changes) {
  absl::Status status;
  auto event = decoder_.Decode(record.value);
  if (event.ok()) {
    cluster::ChangeSet event_changes;
    status = state_.Apply(*event, StateNowMicros(), event_changes);
    if (status.ok()) {
      if (const auto* set = std::get_if<cluster::SetPolicy>(&event->body)) {
        // Applied with the batch (CommitChanges), so the network the next
        // round carries is the new policy's; the last request wins.
        requested_policy_ = set->policy;
      }
      SyncNowIfDeterministic(event_changes);
      changes.Merge(event_changes);
      meta_.set_events_applied(meta_.events_applied() + 1);
      if (metrics_ && !replaying_) metrics_->events_applied.Increment();
      if (const auto* job = std::get_if<cluster::JobSubmitted>(&event->body)) {
        meta_.set_tasks_submitted(meta_.tasks_submitted() + job->tasks.size());
      } else if (std::holds_alternative<cluster::TaskSubmitted>(event->body)) {
        meta_.set_tasks_submitted(meta_.tasks_submitted() + 1);
      }
      return std::holds_alternative<cluster::Tick>(event->body);
    }
  } else {
    status = event.status();
  }
  meta_.set_events_rejected(meta_.events_rejected() + 1);
  spdlog::warn("event {}/{}@{} rejected: {}", record.topic, record.partition,
               record.offset, status.ToString());
  if (replaying_) return false;  // its dead letter was published before
  AddDeadLetter(record, status);
  return false;
}

void GraphManager::HandlePlacementRecord(const bus::Record& record,
                                         cluster::ChangeSet& changes) {
  v1::PlacementRecord message;
  if (!message.ParseFromString(record.value)) {
    const auto& through = meta_.placement_letters_through();
    const auto letter = through.find(record.partition);
    if (letter != through.end() && record.offset < letter->second) {
      return;  // read again after a restart; its letter was confirmed
    }
    spdlog::warn("undecodable placement record {}/{}@{}", record.topic,
                 record.partition, record.offset);
    AddDeadLetter(record,
                  absl::InvalidArgumentError("undecodable PlacementRecord"));
    return;
  }
  if (message.has_resync_request()) {
    spdlog::info("solver worker epoch {} asks for a snapshot: {}",
                 message.resync_request().epoch(),
                 message.resync_request().reason());
    // Solver failover: the asking worker becomes the current one; rounds
    // are addressed to it and only its answers are applied from now on.
    meta_.set_solver_epoch(message.resync_request().epoch());
    collector_.set_solver_epoch(solver_epoch());
    // The asking solver cannot answer the round in flight, and nobody
    // else will (any other worker is fenced now): it is abandoned, so a
    // restart does not wait for its timeout either. In deterministic mode
    // the same cut is re-sent as a snapshot at once (nothing was consumed
    // since), so rounds keep their places.
    collector_.Clear();
    rounds_.Abandon();
    return;
  }
  if (collector_.Add(record.partition, record.offset, message)) {
    ApplyDecisions(changes);
  }
}

int64_t GraphManager::StateNowMicros() const {
  return options_.deterministic() ? state_.last_time_us() : batch_time_us_;
}

void GraphManager::StageMetaWithTime(storage::StateBatch& batch) {
  // Every commit passes here.
  StageAcknowledgedCopies(batch);
  rounds_.StoreIn(meta_);
  meta_.set_last_time_us(state_.last_time_us());
  StageMeta(meta_, batch);
}

absl::Status GraphManager::CommitChanges(const cluster::ChangeSet& changes,
                                         storage::StateBatch batch,
                                         v1::LedgerRecord* ledger) {
  // Memory is ahead of disk after a failed sync; only a restart is safe.
  if (!sync_error_.ok()) return sync_error_;
  // Deterministic mode synced event by event and round by round already
  // (SyncNowIfDeterministic).
  if (!options_.deterministic()) {
    const int64_t start_us = SteadyMicros();
    FLOWSCHED_RETURN_IF_ERROR(SyncNetwork(changes));
    rounds_.AddSyncMicros(SteadyMicros() - start_us);
  }
  std::vector<flow::GraphChange> network_changes = network_.TakeChanges();
  StageEntities(changes, state_, batch);
  StageNetwork(network_changes, network_, batch);
  std::optional<OutboxEntry> staged;
  if (ledger != nullptr) staged = StageLedger(*ledger, batch);
  StageMetaWithTime(batch);
  absl::Status committed = store_->Commit(std::move(batch));
  if (!committed.ok()) {
    // Memory is ahead of disk now; only a restart from disk is safe.
    return absl::Status(committed.code(), absl::StrCat("state commit failed: ",
                                                       committed.message()));
  }
  if (staged) ledger_->Publish(std::move(*staged));
  pending_changes_.insert(pending_changes_.end(),
                          std::make_move_iterator(network_changes.begin()),
                          std::make_move_iterator(network_changes.end()));
  return absl::OkStatus();
}

}  // namespace flowsched::graph_manager
