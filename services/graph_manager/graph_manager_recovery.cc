// GraphManager: start-up and recovery. Open() reads the whole ledger,
// opens (or rebuilds) the RocksDB store, and catches the store up with
// the ledger by replaying the events records it names, so a restart ends
// in the state the crashed instance committed or published.

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "flowsched/v1/placements.pb.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_spec.h"
#include "services/graph_manager/graph_manager.h"
#include "services/graph_manager/graph_manager_timeouts.h"
#include "services/graph_manager/state_digest.h"
#include "services/graph_manager/state_persister.h"
#include "services/graph_manager/state_rebuilder.h"
#include "spdlog/spdlog.h"

namespace flowsched::graph_manager {
namespace {

constexpr int kReplayTimeoutMs = 60'000;  // the whole ledger, at start
// Written into GraphManagerMeta.format_version.
constexpr uint32_t kStoreFormatVersion = 1;

// How long each step of a start took, for the log: a slow start says which
// step to look at ("ledger 280 ms, store 250 ms, ...").
class StartPhases {
 public:
  explicit StartPhases(int64_t start_us) : last_us_(start_us) {}
  void Mark(const char* name, int64_t now_us) {
    absl::StrAppend(&text_, text_.empty() ? "" : ", ", name, " ",
                    (now_us - last_us_) / 1000, " ms");
    total_us_ += now_us - last_us_;
    last_us_ = now_us;
  }
  std::string ToString() const {
    return absl::StrCat(total_us_ / 1000, " ms (", text_, ")");
  }

 private:
  int64_t last_us_;
  int64_t total_us_ = 0;
  std::string text_;
};

}  // namespace

absl::Status GraphManager::RepublishPendingCopies() {
  // A pending copy that does not parse is a damaged store like any other
  // record that does not (DataLoss: moved aside and rebuilt).
  FLOWSCHED_RETURN_IF_ERROR(ledger_->RepublishPending(*store_));
  FLOWSCHED_ASSIGN_OR_RETURN(const uint64_t last_pending_letter,
                             dead_letters_->RepublishPending(*store_));
  // (A store from before the letter outbox has no dead_letter_seq.)
  meta_.set_dead_letter_seq(
      std::max(meta_.dead_letter_seq(), last_pending_letter));
  return absl::OkStatus();
}

absl::Status GraphManager::ClaimEpoch(const LedgerHistory& history) {
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
  return absl::OkStatus();
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
  StartPhases phases(SteadyMicros());
  FLOWSCHED_ASSIGN_OR_RETURN(producer_, bus_->NewSink());
  FLOWSCHED_ASSIGN_OR_RETURN(consumer_,
                             bus_->NewSource("flowsched-graph-manager"));
  dead_letters_ = std::make_unique<DeadLetterOutbox>(
      *producer_, options_.topics.dead_letters);
  ledger_ =
      std::make_unique<LedgerPublisher>(*producer_, options_.topics.ledger);
  // The full metadata behind the partition counts also fills the producer's
  // cache: without it, its first record to a topic (the epoch claim below)
  // waits about a second for librdkafka's periodic topic scan.
  FLOWSCHED_ASSIGN_OR_RETURN(
      event_partitions_,
      producer_->PartitionCount(options_.topics.events, kMetadataTimeoutMs));
  FLOWSCHED_ASSIGN_OR_RETURN(
      placement_partitions_,
      producer_->PartitionCount(options_.topics.placements,
                                kMetadataTimeoutMs));
  phases.Mark("metadata", SteadyMicros());
  FLOWSCHED_ASSIGN_OR_RETURN(auto replay_consumer,
                             bus_->NewSource("flowsched-graph-manager-replay"));
  LedgerHistory history;
  int64_t ledger_next = bus::kOffsetBeginning;
  FLOWSCHED_RETURN_IF_ERROR(ReadLedger(*replay_consumer, options_.topics.ledger,
                                       kReplayTimeoutMs, &ledger_next,
                                       history));
  phases.Mark("ledger", SteadyMicros());
  absl::Status opened = OpenStore(history);
  phases.Mark("store", SteadyMicros());
  if (!opened.ok()) {
    damaged_store_ = opened.code() == absl::StatusCode::kDataLoss;
    return opened;
  }
  const absl::Status republished = RepublishPendingCopies();
  if (!republished.ok()) {
    damaged_store_ = republished.code() == absl::StatusCode::kDataLoss;
    return republished;
  }
  phases.Mark("republish", SteadyMicros());
  FLOWSCHED_RETURN_IF_ERROR(CatchUp(history, *replay_consumer));
  phases.Mark("catch-up", SteadyMicros());
  FLOWSCHED_RETURN_IF_ERROR(ClaimEpoch(history));
  FlushOutboxes(0, kFlushTimeoutMs, /*idle=*/true);
  phases.Mark("claim", SteadyMicros());
  digest_at_start_ = StateDigest(state_, network_);
  phases.Mark("digest", SteadyMicros());
  spdlog::info(
      "graph manager epoch {} (policy {}) restored {} machines, {} jobs, {} "
      "tasks, network of {} nodes and {} arcs; state digest {}",
      meta_.epoch(), meta_.policy(), state_.machines().size(),
      state_.jobs().size(), state_.tasks().size(), network_.node_count(),
      network_.arc_count(), digest_at_start_);
  FLOWSCHED_RETURN_IF_ERROR(AssignInputs());
  phases.Mark("assign", SteadyMicros());
  spdlog::info("started in {}", phases.ToString());
  collector_.set_solver_epoch(solver_epoch());
  // A round restored in flight is waited for from now; the catch-up's
  // syncs belong to no round.
  rounds_.OnStart(SteadyMicros());
  if (const InFlightRound* in_flight = rounds_.in_flight()) {
    // Results of the round cut before the restart may still arrive. Parts
    // read before the restart are read again: the stored placements
    // offsets were held at them (InFlightRound::held_placement_offsets).
    ExpectRound(in_flight->id, in_flight->epoch);
  }
  return absl::OkStatus();
}

absl::Status GraphManager::OpenStore(const LedgerHistory& history) {
  // A predecessor killed a moment ago may hold the lock a little longer.
  FLOWSCHED_ASSIGN_OR_RETURN(
      store_, storage::StateStore::Open(
                  options_.data_dir + "/state",
                  storage::StateStore::OpenOptions{.lock_wait_ms = 10'000}));
  // Integrity: block checksums of every SST file (RocksDB checks the WAL and
  // MANIFEST on open), every record decodes and fits (RestoreState), meta
  // present in a non-empty store, and the state equals the one a clean stop
  // recorded.
  FLOWSCHED_RETURN_IF_ERROR(store_->VerifyChecksums());
  FLOWSCHED_RETURN_IF_ERROR(RestoreState(*store_, state_, network_, meta_));
  rounds_.Restore(meta_);
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
                                   bus::RecordSource& consumer) {
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
  FLOWSCHED_ASSIGN_OR_RETURN(auto event_offsets,
                             store_->LoadOffsets(options_.topics.events));
  for (const auto& [partition, offset] : event_offsets) {
    next_offsets_[{options_.topics.events, partition}] = offset;
  }
  EventFeed feed(consumer, options_.topics.events, event_partitions_,
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
  rounds_.Abandon();
  storage::StateBatch batch;
  for (int32_t p = 0; p < placement_partitions_; ++p) {
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
        rounds_.OnEvent(ApplyEventRecord(event, changes));
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
    rounds_.Cut(round_id, GraphEpoch(record.epoch()), SteadyMicros());
    meta_.set_last_published_round_id(round_id.value());
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

}  // namespace flowsched::graph_manager
