#include "services/graph_manager/graph_manager.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "flowsched/v1/placements.pb.h"
#include "flowsched/v1/rounds.pb.h"
#include "services/bus/dead_letter_publisher.h"
#include "services/codec/decision_codec.h"
#include "services/codec/gang_codec.h"
#include "services/codec/round_parts.h"
#include "services/common/status_macros.h"
#include "services/core/gang_requirements.h"
#include "services/core/round_apply.h"
#include "services/flow/policy_spec.h"
#include "services/graph_manager/state_digest.h"
#include "services/graph_manager/state_persister.h"
#include "services/graph_manager/state_rebuilder.h"
#include "services/metrics/decision_kind.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"

namespace flowsched::graph_manager {
namespace {

constexpr int kMetadataTimeoutMs = 10'000;
constexpr int kFlushTimeoutMs = 10'000;
// Reading the whole ledger, or waiting for one events record, at start.
constexpr int kReplayTimeoutMs = 60'000;
// Ledger records and dead letters are acknowledged (and their pending
// copies dropped) this often; a shorter flush keeps a broker outage from
// stalling the loop long.
constexpr int kOutboxFlushIntervalMs = 100;
constexpr int kOutboxFlushTimeoutMs = 2'000;
// Written into GraphManagerMeta.format_version.
constexpr uint32_t kStoreFormatVersion = 1;
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

GraphManager::GraphManager(GraphManagerOptions options, const Clock& clock)
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
      state_(options_.limits) {}

absl::StatusOr<std::unique_ptr<GraphManager>> GraphManager::Create(
    GraphManagerOptions options, const Clock& clock, bus::LeaderLease* lease) {
  if (options.data_dir.empty()) {
    return absl::InvalidArgumentError("graph manager needs a data directory");
  }
  auto manager =
      std::unique_ptr<GraphManager>(new GraphManager(options, clock));
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
      new GraphManager(std::move(options), clock));
  manager->lease_ = lease;
  FLOWSCHED_RETURN_IF_ERROR(manager->Open());
  FLOWSCHED_RETURN_IF_ERROR(manager->SalvagePendingLetters(moved));
  return manager;
}

absl::Status GraphManager::Open() {
  // Fails early on a bad flag, before the store is touched.
  FLOWSCHED_RETURN_IF_ERROR(flow::MakePolicy(options_.policy).status());
  std::error_code ec;
  std::filesystem::create_directories(options_.data_dir, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("cannot create data directory ",
                                               options_.data_dir, ": ",
                                               ec.message()));
  }
  // The brokers come first: a missing or damaged store is rebuilt from the
  // topics.
  bus::KafkaOptions kafka = options_.kafka;
  kafka.client_id = "flowsched-graph-manager";
  FLOWSCHED_ASSIGN_OR_RETURN(producer_, bus::Producer::Create(kafka));
  FLOWSCHED_ASSIGN_OR_RETURN(
      consumer_, bus::Consumer::Create(kafka, "flowsched-graph-manager"));
  dead_letters_ = std::make_unique<DeadLetterOutbox>(
      *producer_, options_.topics.dead_letters);
  ledger_ =
      std::make_unique<LedgerPublisher>(*producer_, options_.topics.ledger);
  FLOWSCHED_ASSIGN_OR_RETURN(
      auto replay_consumer,
      bus::Consumer::Create(kafka, "flowsched-graph-manager-replay"));
  LedgerHistory history;
  int64_t ledger_next = bus::kOffsetBeginning;
  FLOWSCHED_RETURN_IF_ERROR(ReadLedger(*replay_consumer, options_.topics.ledger,
                                       kReplayTimeoutMs, &ledger_next,
                                       history));
  absl::Status opened = OpenStore(history);
  if (!opened.ok()) {
    damaged_store_ = opened.code() == absl::StatusCode::kDataLoss;
    return opened;
  }
  // A pending copy that does not parse is a damaged store like any other
  // record that does not (DataLoss: moved aside and rebuilt).
  absl::Status republished = ledger_->RepublishPending(*store_);
  uint64_t last_pending_letter = 0;
  if (republished.ok()) {
    absl::StatusOr<uint64_t> last = dead_letters_->RepublishPending(*store_);
    republished = last.status();
    if (last.ok()) last_pending_letter = *last;
  }
  if (!republished.ok()) {
    damaged_store_ = republished.code() == absl::StatusCode::kDataLoss;
    return republished;
  }
  // (A store from before the letter outbox has no dead_letter_seq.)
  meta_.set_dead_letter_seq(
      std::max(meta_.dead_letter_seq(), last_pending_letter));
  FLOWSCHED_RETURN_IF_ERROR(CatchUp(history, *replay_consumer));

  // A new epoch per start, above every epoch the ledger ever carried (two
  // instances with their own stores must never share one): results cut by
  // an older instance are told apart, and the claim fences it off.
  meta_.set_epoch(std::max(epoch(), history.max_epoch()).value() + 1);
  if (meta_.next_round_id() == 0) meta_.set_next_round_id(1);
  meta_.set_format_version(kStoreFormatVersion);
  meta_.clear_clean_stop_digest();
  v1::LedgerRecord claim;
  claim.mutable_claim()->set_epoch(meta_.epoch());
  claim.mutable_claim()->set_instance(
      absl::StrCat(options_.data_dir, " pid ", ::getpid()));
  claim.mutable_claim()->set_policy(meta_.policy());
  storage::StateBatch batch;
  std::optional<OutboxEntry> staged = StageLedger(claim, batch);
  StageMetaWithTime(batch);
  FLOWSCHED_RETURN_IF_ERROR(store_->Commit(std::move(batch)));
  if (staged) ledger_->Publish(std::move(*staged));
  FlushOutboxes(0, kFlushTimeoutMs, /*idle=*/true);
  digest_at_start_ = StateDigest(state_, network_);
  spdlog::info(
      "graph manager epoch {} (policy {}) restored {} machines, {} jobs, {} "
      "tasks, network of {} nodes and {} arcs; state digest {}",
      meta_.epoch(), meta_.policy(), state_.machines().size(),
      state_.jobs().size(), state_.tasks().size(), network_.node_count(),
      network_.arc_count(), digest_at_start_);
  FLOWSCHED_RETURN_IF_ERROR(AssignInputs());
  collector_.set_solver_epoch(solver_epoch());
  if (meta_.in_flight_round_id() != 0) {
    // Results of the round cut before the restart may still arrive. Parts
    // read before the restart are read again: the stored placements
    // offsets were held at them (held_placement_offsets_).
    ExpectRound(RoundId(meta_.in_flight_round_id()),
                GraphEpoch(meta_.in_flight_graph_epoch()));
    round_sent_steady_us_ = SteadyMicros();
    round_started_steady_us_ = round_sent_steady_us_;
  }
  sync_us_since_cut_ = 0;  // the catch-up's syncs belong to no round
  return absl::OkStatus();
}

absl::Status GraphManager::OpenStore(const LedgerHistory& history) {
  FLOWSCHED_ASSIGN_OR_RETURN(
      store_, storage::StateStore::Open(options_.data_dir + "/state",
                                        storage::StateStore::OpenOptions{}));
  // Integrity: block checksums of every SST file (RocksDB checks the WAL and
  // MANIFEST on open), every record decodes and fits (RestoreState), meta
  // present in a non-empty store, and the state equals the one a clean stop
  // recorded.
  FLOWSCHED_RETURN_IF_ERROR(store_->VerifyChecksums());
  FLOWSCHED_RETURN_IF_ERROR(RestoreState(*store_, state_, network_, meta_));
  FLOWSCHED_ASSIGN_OR_RETURN(const bool empty, store_->IsEmpty());
  if (meta_.epoch() == 0 && !empty) {
    return absl::DataLossError("state store holds records but no meta");
  }
  if (meta_.format_version() > kStoreFormatVersion) {
    // A newer flowsched wrote it: not damage, so not moved aside.
    return absl::FailedPreconditionError(
        absl::StrCat("state store format ", meta_.format_version(),
                     " is newer than ", kStoreFormatVersion));
  }
  if (!meta_.clean_stop_digest().empty()) {
    const std::string digest = StateDigest(state_, network_);
    if (digest != meta_.clean_stop_digest()) {
      return absl::DataLossError(absl::StrCat(
          "state digest ", digest, " differs from ", meta_.clean_stop_digest(),
          " recorded at the last clean stop"));
    }
  }
  // Another instance took over and continued a history this store never
  // saw (or overwrote its unpublished tail): it is no base to catch up on.
  if (meta_.ledger_seq() > 0) {
    const v1::LedgerRecord* same = history.Find(meta_.ledger_seq());
    if ((same != nullptr && same->epoch() != meta_.ledger_epoch()) ||
        (same == nullptr && history.claimed_epoch() > epoch())) {
      return absl::DataLossError(absl::StrCat(
          "the store's history (ledger seq ", meta_.ledger_seq(), ", epoch ",
          meta_.ledger_epoch(), ") diverged from the ledger (claimed epoch ",
          history.claimed_epoch().value(), ")"));
    }
  }
  network_.set_record_changes(true);
  // The stored network was built by the stored policy; the flag only names
  // the policy of a fresh store (a rebuild takes the ledger's).
  FLOWSCHED_ASSIGN_OR_RETURN(const std::string flag_policy,
                             flow::CanonicalPolicySpec(options_.policy));
  if (meta_.policy().empty()) meta_.set_policy(flag_policy);
  if (meta_.policy() != flag_policy) {
    spdlog::info(
        "keeping the stored policy {} (--policy {} applies to a "
        "fresh data directory only)",
        meta_.policy(), flag_policy);
  }
  absl::Status adopted = policy_network_.Adopt(meta_.policy());
  if (!adopted.ok()) {
    return absl::DataLossError(absl::StrCat(
        "stored network and policy ", meta_.policy(), ": ", adopted.message()));
  }
  return absl::OkStatus();
}

absl::Status GraphManager::CatchUp(const LedgerHistory& history,
                                   bus::Consumer& consumer) {
  uint64_t seq = meta_.ledger_seq();
  if (history.max_seq() <= seq) return absl::OkStatus();
  const bool rebuild = seq == 0;
  const size_t count = static_cast<size_t>(std::distance(
      history.records().upper_bound(seq), history.records().end()));
  if (rebuild) {
    spdlog::warn(
        "REBUILDING the state from the topics: replaying {} ledger "
        "records and their events",
        count);
  } else {
    spdlog::warn(
        "the ledger is ahead of the store (seq {} vs {}): replaying "
        "{} records",
        history.max_seq(), seq, count);
  }
  FLOWSCHED_ASSIGN_OR_RETURN(
      const int32_t event_partitions,
      producer_->PartitionCount(options_.topics.events, kMetadataTimeoutMs));
  FLOWSCHED_ASSIGN_OR_RETURN(auto event_offsets,
                             store_->LoadOffsets(options_.topics.events));
  for (const auto& [partition, offset] : event_offsets) {
    next_offsets_[{options_.topics.events, partition}] = offset;
  }
  EventFeed feed(consumer, options_.topics.events, event_partitions,
                 event_offsets, kReplayTimeoutMs);
  replaying_ = true;
  for (auto it = history.records().upper_bound(seq);
       it != history.records().end(); ++it) {
    if (it->first != seq + 1) {
      replaying_ = false;
      return absl::FailedPreconditionError(
          absl::StrCat("the ledger lacks record ", seq + 1, " (next is ",
                       it->first, "); cannot replay past it"));
    }
    absl::Status replayed = ReplayRecord(it->second, feed);
    if (!replayed.ok()) {
      replaying_ = false;
      return absl::Status(replayed.code(),
                          absl::StrCat("replaying ledger record ", it->first,
                                       ": ", replayed.message()));
    }
    seq = it->first;
  }
  replaying_ = false;
  // A round cut but not applied in the ledger is cut again (its results,
  // if any, belong to an older epoch and are ignored); results already in
  // the placements topic are not read again.
  if (meta_.in_flight_round_id() != 0) {
    meta_.set_in_flight_round_id(0);
    meta_.set_in_flight_graph_epoch(0);
    if (options_.deterministic()) meta_.set_cut_pending(true);
  }
  storage::StateBatch batch;
  FLOWSCHED_ASSIGN_OR_RETURN(
      const int32_t placement_partitions,
      producer_->PartitionCount(options_.topics.placements,
                                kMetadataTimeoutMs));
  for (int32_t p = 0; p < placement_partitions; ++p) {
    FLOWSCHED_ASSIGN_OR_RETURN(
        auto marks,
        consumer.Watermarks(options_.topics.placements, p, kMetadataTimeoutMs));
    batch.SetOffset(options_.topics.placements, p, marks.second);
  }
  StageMetaWithTime(batch);
  FLOWSCHED_RETURN_IF_ERROR(store_->Commit(std::move(batch)));
  next_offsets_.clear();     // AssignInputs reads them from the store
  pending_changes_.clear();  // the first round is a snapshot
  spdlog::warn("{} {} ledger records: ledger seq {}, state digest {}",
               rebuild ? "rebuilt the state from" : "caught up with", count,
               seq, StateDigest(state_, network_));
  return absl::OkStatus();
}

absl::Status GraphManager::ReplayRecord(const v1::LedgerRecord& record,
                                        EventFeed& feed) {
  batch_time_us_ = record.state_time_us();
  if (record.has_claim() && !record.claim().policy().empty() &&
      record.claim().policy() != policy_network_.spec()) {
    // Only a fresh store can differ (SetPolicy events are replayed): it was
    // opened with this instance's --policy, not the original's.
    if (network_.node_count() != 0) {
      spdlog::warn(
          "ledger record {} names policy {} while the replayed "
          "state has {}",
          record.seq(), record.claim().policy(), policy_network_.spec());
    }
    FLOWSCHED_RETURN_IF_ERROR(SwitchPolicy(record.claim().policy()));
  }
  cluster::ChangeSet changes;
  storage::StateBatch batch;
  for (const v1::LedgerStep& step : record.steps()) {
    if (step.has_events()) {
      const v1::EventRun& run = step.events();
      for (int64_t offset = run.from_offset(); offset < run.to_offset();
           ++offset) {
        FLOWSCHED_ASSIGN_OR_RETURN(const bus::Record event,
                                   feed.Take(run.partition(), offset));
        CountEventForCut(ApplyEventRecord(event, changes));
      }
      next_offsets_[{options_.topics.events, run.partition()}] =
          run.to_offset();
      batch.SetOffset(options_.topics.events, run.partition(), run.to_offset());
    } else if (step.has_round()) {
      const v1::RoundApplied& original = step.round();
      std::vector<v1::PlacementDecision> decisions;
      decisions.reserve(static_cast<size_t>(original.decisions_size()));
      for (const v1::LedgerDecision& d : original.decisions()) {
        decisions.push_back(d.decision());
      }
      v1::RoundApplied again;
      again.set_round_id(original.round_id());
      again.set_graph_epoch(original.graph_epoch());
      ApplyRound(std::move(decisions), again, changes);
      if (again.applied() != original.applied()) {
        spdlog::error(
            "replaying round {} applied {} decisions, the original "
            "run {}: the rebuilt state differs",
            original.round_id(), again.applied(), original.applied());
      }
    }
  }
  if (record.has_cut()) {
    // The state part of MaybeCutRound, at the original cut's time.
    FLOWSCHED_ASSIGN_OR_RETURN(auto refreshed, RefreshPrices());
    StageNetwork(refreshed, network_, batch);
    const RoundId round_id(record.cut().round_id());
    meta_.set_next_round_id(
        std::max(meta_.next_round_id(), round_id.value() + 1));
    meta_.set_in_flight_round_id(round_id.value());
    meta_.set_in_flight_graph_epoch(record.epoch());
    meta_.set_last_published_round_id(round_id.value());
    meta_.set_cut_pending(false);
  }
  v1::LedgerRecord copy = record;
  return CommitChanges(changes, std::move(batch), &copy);
}

std::optional<OutboxEntry> GraphManager::StageLedger(
    v1::LedgerRecord& record, storage::StateBatch& batch) {
  if (replaying_) {
    meta_.set_ledger_seq(record.seq());
    meta_.set_ledger_epoch(record.epoch());
    return std::nullopt;
  }
  record.set_seq(meta_.ledger_seq() + 1);
  record.set_epoch(meta_.epoch());
  record.set_state_time_us(StateNowMicros());
  meta_.set_ledger_seq(record.seq());
  meta_.set_ledger_epoch(record.epoch());
  return ledger_->Stage(record, batch);
}

bool GraphManager::CountEventForCut(bool tick) {
  if (!options_.deterministic()) return false;
  meta_.set_events_since_cut(meta_.events_since_cut() + 1);
  if ((options_.cut_at_ticks && tick) ||
      (options_.cut_every_events > 0 &&
       meta_.events_since_cut() >= options_.cut_every_events)) {
    meta_.set_events_since_cut(0);
    meta_.set_cut_pending(true);
    return true;
  }
  return false;
}

absl::Status GraphManager::AssignInputs() {
  FLOWSCHED_ASSIGN_OR_RETURN(
      event_partitions_,
      producer_->PartitionCount(options_.topics.events, kMetadataTimeoutMs));
  FLOWSCHED_ASSIGN_OR_RETURN(
      placement_partitions_,
      producer_->PartitionCount(options_.topics.placements,
                                kMetadataTimeoutMs));
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
  return SetEventsPaused(options_.deterministic() &&
                         (meta_.cut_pending() || collector_.expecting() ||
                          meta_.in_flight_round_id() != 0));
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

bool GraphManager::RoundDue() const {
  if (collector_.expecting()) return false;
  if (options_.deterministic()) return meta_.cut_pending();
  return need_snapshot_ || !pending_changes_.empty();
}

absl::Status GraphManager::Run(const std::atomic<bool>& stop) {
  MaybeWriteStatus(/*force=*/true);
  while (!stop.load()) {
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
  }
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
  return absl::OkStatus();
}

absl::Status GraphManager::ProcessRecords(
    const std::vector<bus::Record>& records) {
  cluster::ChangeSet changes;
  storage::StateBatch batch;
  const bool was_paused = events_paused_;
  bool reseek = false;
  batch_time_us_ = clock_.NowMicros();
  batch_ledger_.Clear();
  batch_letters_.clear();
  staged_letters_.clear();
  for (const bus::Record& record : records) {
    const bool is_event = record.topic == options_.topics.events;
    if (is_event) {
      // Records fetched before a pause, or from partitions deterministic
      // mode does not read, wait for their turn.
      auto next = next_offsets_.find({record.topic, record.partition});
      if (events_paused_ || next == next_offsets_.end()) continue;
      // A record fetched before a re-assignment may come again after it;
      // apply each offset once, in order.
      if (next->second >= 0 && record.offset != next->second) {
        if (record.offset > next->second) reseek = true;
        continue;
      }
      const bool tick = ApplyEventRecord(record, changes);
      if (CountEventForCut(tick)) events_paused_ = true;
      // The ledger keeps the exact interleaving: runs of one partition.
      const int n = batch_ledger_.steps_size();
      v1::EventRun* run =
          n > 0 && batch_ledger_.steps(n - 1).has_events()
              ? batch_ledger_.mutable_steps(n - 1)->mutable_events()
              : nullptr;
      if (run == nullptr || run->partition() != record.partition ||
          run->to_offset() != record.offset) {
        run = batch_ledger_.add_steps()->mutable_events();
        run->set_partition(record.partition);
        run->set_from_offset(record.offset);
      }
      run->set_to_offset(record.offset + 1);
    } else if (record.topic == options_.topics.placements) {
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
        continue;
      }
      if (collector_.expecting()) {
        held_placement_offsets_.try_emplace(record.partition, record.offset);
      }
      HandlePlacementRecord(record, changes);
      if (!collector_.expecting()) held_placement_offsets_.clear();
      next_offsets_[{record.topic, record.partition}] = record.offset + 1;
      continue;
    } else if (record.topic == options_.topics.ledger) {
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
      continue;
    } else {
      continue;
    }
    next_offsets_[{record.topic, record.partition}] = record.offset + 1;
    batch.SetOffset(record.topic, record.partition, record.offset + 1);
  }
  // The letters commit with the offsets that pass their records.
  StageDeadLetters(batch);
  // Every batch, not only those with placements records: a released hold
  // must reach the store even if no record of that partition came since.
  StagePlacementOffsets(batch);
  FLOWSCHED_RETURN_IF_ERROR(
      CommitChanges(changes, std::move(batch),
                    batch_ledger_.steps_size() > 0 ? &batch_ledger_ : nullptr));
  PublishStagedLetters();
  if (events_paused_ != was_paused || reseek) {
    FLOWSCHED_RETURN_IF_ERROR(SetEventsPaused(events_paused_));
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
    // The asking solver cannot answer the round in flight. In
    // deterministic mode the same cut is re-sent as a snapshot at once
    // (nothing was consumed since), so rounds keep their places.
    if (collector_.expecting() && options_.deterministic()) {
      meta_.set_cut_pending(true);
    }
    // Nobody answers that round any more (the asking worker waits for its
    // snapshot, any other is fenced now), so it is not in flight for a
    // restart either, which would otherwise wait for the round timeout.
    if (collector_.expecting()) {
      meta_.set_in_flight_round_id(0);
      meta_.set_in_flight_graph_epoch(0);
    }
    collector_.Clear();
    need_snapshot_ = true;
    return;
  }
  if (collector_.Add(record.partition, record.offset, message)) {
    ApplyDecisions(changes);
  }
}

void GraphManager::AddDeadLetter(const bus::Record& record,
                                 const absl::Status& reason) {
  if (metrics_) metrics_->dead_letters.Count(reason.code());
  batch_letters_.push_back(
      bus::MakeDeadLetter(record, reason, "graph-manager", clock_.NowMicros()));
}

void GraphManager::StageDeadLetters(storage::StateBatch& batch) {
  // Staged, not produced: a letter produced before its batch commits could
  // arrive for a record a crash then reads (and letters) again, and one
  // produced after the commit without a pending copy is lost by a crash or
  // an outage in between. With the copy in the batch neither happens, and
  // the batch never waits for the broker.
  auto& through = *meta_.mutable_placement_letters_through();
  for (const v1::DeadLetter& letter : batch_letters_) {
    const uint64_t seq = meta_.dead_letter_seq() + 1;
    meta_.set_dead_letter_seq(seq);
    staged_letters_.push_back(dead_letters_->Stage(seq, letter, batch));
    if (letter.topic() == options_.topics.placements) {
      int64_t& next = through[letter.partition()];
      next = std::max(next, letter.offset() + 1);
    }
  }
  batch_letters_.clear();
}

absl::Status GraphManager::SalvagePendingLetters(const std::string& moved_dir) {
  auto damaged = storage::StateStore::Open(
      moved_dir, {.create_if_missing = false, .read_only = true});
  if (!damaged.ok()) {
    spdlog::error(
        "pending dead letters of the damaged store {} are lost: "
        "it does not open ({})",
        moved_dir, damaged.status().ToString());
    return absl::OkStatus();
  }
  size_t salvaged = 0;
  size_t unreadable = 0;
  absl::Status scanned = (*damaged)->ScanPrefix(
      storage::kDeadLetterPrefix,
      [&](std::string_view key, std::string_view value) {
        v1::DeadLetter letter;
        if (letter.ParseFromString(std::string(value))) {
          batch_letters_.push_back(std::move(letter));
          ++salvaged;
        } else {
          absl::StatusOr<uint64_t> seq =
              storage::DecodeIdKey(key, storage::kDeadLetterPrefix);
          spdlog::error(
              "pending dead letter {} of the damaged store {} does "
              "not parse; it is lost",
              seq.ok() ? std::to_string(*seq) : "with a bad key", moved_dir);
          ++unreadable;
        }
        return absl::OkStatus();
      });
  if (!scanned.ok()) {
    // What the scan read before it broke is still salvaged below.
    spdlog::error(
        "the pending dead letters of the damaged store {} could "
        "not all be read ({}); the rest are lost",
        moved_dir, scanned.ToString());
  }
  if (salvaged == 0) return absl::OkStatus();
  spdlog::warn(
      "salvaged {} pending dead letter(s) from the damaged store {} "
      "({} unreadable); publishing them again",
      salvaged, moved_dir, unreadable);
  storage::StateBatch batch;
  StageDeadLetters(batch);
  StageMetaWithTime(batch);
  absl::Status committed = store_->Commit(std::move(batch));
  if (!committed.ok()) {
    staged_letters_.clear();
    return committed;
  }
  PublishStagedLetters();
  return absl::OkStatus();
}

void GraphManager::PublishStagedLetters() {
  for (OutboxEntry& staged : staged_letters_) {
    dead_letters_->Publish(std::move(staged));
  }
  staged_letters_.clear();
}

void GraphManager::FlushOutboxes(int min_interval_ms, int timeout_ms,
                                 bool idle) {
  if (ledger_->FlushDue(min_interval_ms) ||
      dead_letters_->FlushDue(min_interval_ms)) {
    OnProducerFlushed(producer_->Flush(timeout_ms).ok());
  }
  // While input flows, every commit drops the copies acknowledged since
  // (StageMetaWithTime), at no extra write. When none comes, a commit of
  // their own: a crash would otherwise publish them all again (harmless,
  // readers drop duplicates, but every one of them twice).
  if (!idle) return;
  storage::StateBatch batch;
  StageAcknowledgedCopies(batch);
  if (batch.empty()) return;
  absl::Status committed = store_->Commit(std::move(batch));
  if (!committed.ok()) {
    // The copies stay, and the next start publishes them again.
    spdlog::warn("dropping acknowledged outbox copies: {}",
                 committed.ToString());
  }
}

void GraphManager::StageAcknowledgedCopies(storage::StateBatch& batch) {
  ledger_->StageAcknowledged(batch);
  dead_letters_->StageAcknowledged(batch);
}

void GraphManager::OnProducerFlushed(bool ok) {
  ledger_->OnProducerFlushed(ok);
  dead_letters_->OnProducerFlushed(ok);
}

void GraphManager::ApplyDecisions(cluster::ChangeSet& changes) {
  const v1::RoundComplete& summary = collector_.complete_summary();
  v1::RoundApplied* round = batch_ledger_.add_steps()->mutable_round();
  round->set_round_id(summary.round_id());
  round->set_graph_epoch(summary.graph_epoch());
  const int64_t apply_start_us = SteadyMicros();
  ApplyRound(collector_.complete_decisions(), *round, changes);
  const int64_t applied_us = SteadyMicros();
  if (metrics_) {
    metrics_->phase_apply.Observe(Seconds(applied_us - apply_start_us));
    metrics_->round_duration.Observe(
        Seconds(applied_us - round_started_steady_us_));
  }
  last_unscheduled_ = summary.tasks_unscheduled();
  // No worker claimed the rounds yet (a store from before fencing): the
  // one whose answer was applied is current.
  if (solver_epoch() == WorkerEpoch()) {
    meta_.set_solver_epoch(summary.epoch());
    collector_.set_solver_epoch(solver_epoch());
  }
  const double latency_ms =
      static_cast<double>(SteadyMicros() - round_sent_steady_us_) / 1000.0;
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
  if (options_.deterministic()) {
    // A round that changed the state is followed by another right away, at
    // the same place in the log; otherwise events flow again.
    if (applied > 0) {
      meta_.set_cut_pending(true);
    } else {
      events_paused_ = false;
    }
  }
  meta_.set_decisions_stale(meta_.decisions_stale() + stale);
  meta_.set_rounds_completed(meta_.rounds_completed() + 1);
  meta_.set_last_applied_round_id(out.round_id());
  meta_.set_in_flight_round_id(0);
  meta_.set_in_flight_graph_epoch(0);
  out.set_applied(applied);
  out.set_stale(stale);
}

int64_t GraphManager::StateNowMicros() const {
  return options_.deterministic() ? state_.last_time_us() : batch_time_us_;
}

void GraphManager::StageMetaWithTime(storage::StateBatch& batch) {
  // Every commit passes here.
  StageAcknowledgedCopies(batch);
  meta_.set_last_time_us(state_.last_time_us());
  StageMeta(meta_, batch);
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
  need_snapshot_ = true;
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
  return policy_network_.Sync(changes, state_, StateNowMicros());
}

void GraphManager::SyncNowIfDeterministic(const cluster::ChangeSet& changes) {
  if (!options_.deterministic() || !sync_error_.ok()) return;
  const int64_t start_us = SteadyMicros();
  sync_error_ = SyncNetwork(changes);
  sync_us_since_cut_ += SteadyMicros() - start_us;
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
    sync_us_since_cut_ += SteadyMicros() - start_us;
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

void GraphManager::CheckRoundTimeout() {
  if (!collector_.expecting()) return;
  const int64_t waited_us = SteadyMicros() - round_sent_steady_us_;
  if (waited_us < int64_t{options_.round_timeout_ms} * 1000) return;
  spdlog::warn(
      "round {} got no complete answer in {} ms; re-cutting as a "
      "snapshot",
      collector_.round_id().value(), waited_us / 1000);
  ++rounds_timed_out_;
  collector_.Clear();
  // Abandoned: none of its parts is needed again, so the next commit stores
  // the full placements offsets.
  held_placement_offsets_.clear();
  meta_.set_in_flight_round_id(0);
  need_snapshot_ = true;
  if (options_.deterministic()) meta_.set_cut_pending(true);
}

absl::StatusOr<std::vector<flow::GraphChange>> GraphManager::RefreshPrices() {
  // Time-dependent parts of the network (Quincy's wait and run costs; the
  // shape-reserving policies' first offer to a gang waiting past its age)
  // are brought up to date right before the cut. Only when a round is due
  // anyway: re-pricing alone never triggers a round, which would otherwise
  // follow round after round while anything waits (deterministic runs add Ticks
  // for that).
  if (!policy_network_.policy().time_dependent()) {
    return std::vector<flow::GraphChange>{};
  }
  FLOWSCHED_RETURN_IF_ERROR(policy_network_.Refresh(state_, StateNowMicros()));
  return network_.TakeChanges();
}

absl::Status GraphManager::MaybeCutRound() {
  if (!RoundDue()) return absl::OkStatus();
  if (SteadyMicros() < next_publish_steady_us_) return absl::OkStatus();

  round_started_steady_us_ = SteadyMicros();
  batch_time_us_ = clock_.NowMicros();
  FLOWSCHED_ASSIGN_OR_RETURN(const std::vector<flow::GraphChange> refreshed,
                             RefreshPrices());
  pending_changes_.insert(pending_changes_.end(), refreshed.begin(),
                          refreshed.end());

  const RoundId round_id(meta_.next_round_id());
  const bool snapshot = need_snapshot_;
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
  const std::vector<flow::GraphChange> snapshot_changes =
      snapshot ? network_.SnapshotChanges() : std::vector<flow::GraphChange>{};
  const std::vector<flow::GraphChange>& changes =
      snapshot ? snapshot_changes : pending_changes_;
  const std::vector<v1::SolverRound> parts =
      codec::SplitRound(header, changes, options_.max_round_record_bytes);
  // Write-ahead: the round is durable as in flight before any part leaves,
  // so a restart after a crash in the middle still accepts its results
  // (which consumers may already act on) instead of orphaning them. Its id
  // is used up either way, so a partly published round is never mistaken
  // for its successor.
  meta_.set_next_round_id(round_id.value() + 1);
  meta_.set_in_flight_round_id(round_id.value());
  meta_.set_in_flight_graph_epoch(meta_.epoch());
  meta_.set_cut_pending(false);
  {
    // The ledger records the cut (and its time) so that a replay re-prices
    // at the same moment.
    v1::LedgerRecord cut;
    cut.mutable_cut()->set_round_id(round_id.value());
    cut.mutable_cut()->set_snapshot(snapshot);
    storage::StateBatch batch;
    StageNetwork(refreshed, network_, batch);
    // No round is in flight here; offsets released since the last commit
    // (a timed-out round) are stored with the new in-flight round.
    StagePlacementOffsets(batch);
    std::optional<OutboxEntry> staged = StageLedger(cut, batch);
    StageMetaWithTime(batch);
    FLOWSCHED_RETURN_IF_ERROR(store_->Commit(std::move(batch)));
    if (staged) ledger_->Publish(std::move(*staged));
  }
  absl::Status sent;
  for (size_t i = 0; i < parts.size() && sent.ok(); ++i) {
    sent = producer_->Produce(options_.topics.rounds, 0, "round",
                              parts[i].SerializeAsString());
  }
  if (sent.ok()) {
    sent = producer_->Flush(kFlushTimeoutMs);
    OnProducerFlushed(sent.ok());
  }
  if (!sent.ok()) {
    // The solver may have some parts or none; a snapshot next time is safe
    // either way. Back off so a broker outage is not hammered.
    spdlog::warn("publishing round {} failed, retrying in {} ms: {}",
                 round_id.value(), publish_backoff_ms_, sent.ToString());
    need_snapshot_ = true;
    pending_changes_.clear();
    // Parts may have reached the broker: keep listening for this round's
    // results until it times out, like any round in flight.
    round_sent_steady_us_ = SteadyMicros();
    ExpectRound(round_id, epoch());
    next_publish_steady_us_ =
        SteadyMicros() + int64_t{publish_backoff_ms_} * 1000;
    publish_backoff_ms_ = std::min(publish_backoff_ms_ * 2, 5000);
    return absl::OkStatus();
  }
  publish_backoff_ms_ = 100;
  if (metrics_) {
    metrics_->phase_publish.Observe(
        Seconds(SteadyMicros() - round_started_steady_us_));
    metrics_->phase_sync.Observe(Seconds(sync_us_since_cut_));
  }
  sync_us_since_cut_ = 0;
  if (snapshot) ++snapshots_published_;
  ++rounds_published_;
  spdlog::debug("published round {} ({} with {} changes in {} records)",
                round_id.value(), snapshot ? "snapshot" : "delta",
                changes.size(), parts.size());
  need_snapshot_ = false;
  pending_changes_.clear();
  round_sent_steady_us_ = SteadyMicros();
  ExpectRound(round_id, epoch());
  // Bookkeeping only (the base of the next delta); committed with the next
  // batch. Losing it to a crash is harmless: a restart sends a snapshot.
  meta_.set_last_published_round_id(round_id.value());
  return absl::OkStatus();
}

void GraphManager::ExpectRound(RoundId round_id, GraphEpoch graph_epoch) {
  // Holds of an earlier round were released when it stopped being in
  // flight; this round's start with the first records read for it.
  held_placement_offsets_.clear();
  collector_.Expect(round_id, graph_epoch,
                    static_cast<uint32_t>(placement_partitions_));
}

void GraphManager::StagePlacementOffsets(storage::StateBatch& batch) const {
  for (const auto& [key, offset] : next_offsets_) {
    if (key.first != options_.topics.placements) continue;
    auto held = held_placement_offsets_.find(key.second);
    batch.SetOffset(
        key.first, key.second,
        held == held_placement_offsets_.end() ? offset : held->second);
  }
}

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
  s.set_round_in_flight(collector_.expecting());
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
