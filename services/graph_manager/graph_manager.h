#pragma once

// The graph manager service: consumes cluster events, keeps the cluster
// state and the flow network (through the configured policy), persists both
// with the consumed offsets in one RocksDB batch per applied batch of
// records, publishes solver rounds (deltas, or snapshots when a solver needs
// one), and applies each round's decisions once, rejecting stale ones.
//
// Lifecycle: Create() opens the store and recovers; Run() loops until the
// stop flag is set or a non-retryable error (disk) occurs. Tests may drive
// the loop themselves instead: RunOnce() per pass, then Stop().
// Thread-safety: single-threaded; Run() owns everything.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "flowsched/v1/ledger.pb.h"
#include "flowsched/v1/state.pb.h"
#include "flowsched/v1/status.pb.h"
#include "services/bus/bus.h"
#include "services/bus/kafka_options.h"
#include "services/bus/leader_lease.h"
#include "services/bus/record_sink.h"
#include "services/bus/record_source.h"
#include "services/bus/topics.h"
#include "services/cluster/cluster_state.h"
#include "services/cluster/event_decoder.h"
#include "services/common/clock.h"
#include "services/common/strong_id.h"
#include "services/core/cut_policy.h"
#include "services/core/policy_network.h"
#include "services/flow/flow_network.h"
#include "services/graph_manager/dead_letter_outbox.h"
#include "services/graph_manager/ledger_publisher.h"
#include "services/graph_manager/round_collector.h"
#include "services/graph_manager/round_tracker.h"
#include "services/graph_manager/state_rebuilder.h"
#include "services/graph_manager/status_report.h"
#include "services/metrics/graph_manager_metrics.h"
#include "storage/state_store.h"

namespace flowsched::graph_manager {

struct GraphManagerOptions {
  bus::KafkaOptions kafka;
  bus::TopicNames topics;
  std::string data_dir;  // RocksDB in <data_dir>/state, status.json beside
  // The policy of a fresh data directory. A store remembers its active
  // policy (GraphManagerMeta.policy, changed by SetPolicy events), and a
  // restart keeps that one whatever this says.
  std::string policy = "load-spreading";
  cluster::ValidationLimits limits;
  // Where the metrics go (not owned; must outlive the manager). Null: none
  // are recorded (the off switch the metrics cost is measured against).
  prometheus::Registry* metrics_registry = nullptr;
  size_t max_batch_records = 5000;
  int poll_timeout_ms = 20;
  int round_timeout_ms = 15000;
  // Gang starvation (core/gang_requirements.h): a gang whose oldest waiting
  // task waited this long gets free room held for it; <= 0: never.
  int64_t gang_hold_after_ms = 60'000;
  int status_interval_ms = 200;
  // Rounds are split into records of at most this many bytes
  // (codec::SplitRound).
  size_t max_round_record_bytes = 512 * 1024;
  // Deterministic round cutting (both 0/false: rounds follow the clock,
  // cut whenever the network changed and no round is in flight).
  // With either set, rounds are cut only after every `cut_every_events`
  // events of events partition 0 and/or at each Tick event, plus at once
  // after a round whose decisions changed the state (core::CutPolicy);
  // events are not consumed while a round is due or in flight. Then the
  // state after any prefix of the log is the same in every run, crashed or
  // not. Time is then log time too: events, decisions and time-dependent
  // prices use the latest event_time_us applied
  // (ClusterState::last_time_us), never the local clock.
  uint64_t cut_every_events = 0;
  bool cut_at_ticks = false;
  [[nodiscard]] core::CutOptions cut_options() const {
    return {.every_events = cut_every_events, .at_ticks = cut_at_ticks};
  }
  [[nodiscard]] bool deterministic() const {
    return core::CutPolicy(cut_options()).deterministic();
  }
};

class GraphManager {
 public:
  // Connects to the brokers, opens (or creates) the data directory,
  // restores the last durable state and catches up with the ledger topic.
  // A damaged store (RocksDB corruption, failed checksums, records without
  // meta, a clean-stop digest that does not match, a history that diverged
  // from the ledger) is moved aside (<data_dir>/state.damaged-<time>) and
  // the state rebuilt from the topics. InvalidArgument for bad options or
  // an unknown policy, Unavailable when the brokers cannot be reached or
  // another process holds the store.
  // `lease` (optional, not owned, must outlive the manager): the leader
  // lease this instance holds; Run() steps down when it is lost.
  static absl::StatusOr<std::unique_ptr<GraphManager>> Create(
      GraphManagerOptions options, const Clock& clock,
      bus::LeaderLease* lease = nullptr);
  // The same on `bus` (not owned, must outlive the manager) instead of the
  // brokers options.kafka names: unit tests run on a bus::MemoryBus.
  static absl::StatusOr<std::unique_ptr<GraphManager>> Create(
      GraphManagerOptions options, const Clock& clock, bus::Bus& bus,
      bus::LeaderLease* lease = nullptr);

  // Runs until `stop` is set. Returns OK after a clean stop, Aborted when
  // this instance must step down (its lease was lost, or the ledger shows a
  // higher epoch's claim: it is fenced), or the error that made continuing
  // unsafe (a failed RocksDB commit, a policy bug).
  absl::Status Run(const std::atomic<bool>& stop);

  // One pass of Run()'s loop: one poll (waiting up to poll_timeout_ms), the
  // records applied and committed, a step-down check, the round timeout, a
  // round cut if one is due, the outboxes flushed and the status written
  // when due. OK to go on; otherwise what Run() returns for it.
  absl::Status RunOnce();
  // What Run() does once the stop flag is set: a last flush, the clean-stop
  // digest committed, the status written. After it, only destroy the
  // manager. A failed commit is logged (the next start then checks less).
  void Stop();

 private:
  // `bus` null: a bus::KafkaBus on options.kafka, owned.
  GraphManager(GraphManagerOptions options, const Clock& clock, bus::Bus* bus);
  static absl::StatusOr<std::unique_ptr<GraphManager>> CreateOn(
      GraphManagerOptions options, const Clock& clock, bus::Bus* bus,
      bus::LeaderLease* lease);
  absl::Status Open();
  // Opens the store, checks it and restores state, network, meta and
  // policy; sets damaged_store_ with a DataLoss status.
  absl::Status OpenStore(const LedgerHistory& history);
  // Publishes again the ledger records and dead letters the store holds
  // unacknowledged (DataLoss if a copy does not parse).
  absl::Status RepublishPendingCopies();
  // Takes this start's epoch, above the store's and every one the ledger
  // carried, and commits and publishes its claim.
  absl::Status ClaimEpoch(const LedgerHistory& history);
  // Replays the ledger records after meta_.ledger_seq() (all of them on an
  // empty store: the rebuild), reading their events from the events topic.
  absl::Status CatchUp(const LedgerHistory& history,
                       bus::RecordSource& consumer);
  absl::Status ReplayRecord(const v1::LedgerRecord& record, EventFeed& feed);
  // Assigns `record` the next seq and the epoch and stages it pending;
  // returns it as staged, to publish once the batch committed. During a
  // replay it only remembers the record as the last one applied and
  // returns nullopt (nothing to publish).
  std::optional<OutboxEntry> StageLedger(v1::LedgerRecord& record,
                                         storage::StateBatch& batch);
  absl::Status AssignInputs();
  // Stops or restarts consuming events, as rounds_.EventsPaused() says
  // (re-assigns the consumer so no fetched-ahead event is ever applied
  // early).
  absl::Status SetEventsPaused(bool paused);
  absl::Status ProcessRecords(const std::vector<bus::Record>& records);
  // ProcessRecords per topic. An event is applied once, in offset order
  // (false: skipped: paused, a partition not read, or out of order, which
  // sets `reseek` when offsets were skipped); a placements record goes to
  // the round collector, its offset held while its round is in flight; a
  // ledger record is only watched for a higher epoch's claim.
  // After an event record beyond the next offset: DataLoss if the broker
  // no longer holds the records in between (its low watermark passed them),
  // rather than re-seeking to them forever. OK if the watermarks cannot be
  // read now (logged; the re-seek goes ahead).
  absl::Status CheckEventsStillHeld();
  bool TakeEventRecord(const bus::Record& record, cluster::ChangeSet& changes,
                       bool& reseek);
  void TakePlacementRecord(const bus::Record& record,
                           cluster::ChangeSet& changes);
  void WatchLedgerRecord(const bus::Record& record);
  // Returns true for a Tick event.
  bool ApplyEventRecord(const bus::Record& record, cluster::ChangeSet& changes);
  void HandlePlacementRecord(const bus::Record& record,
                             cluster::ChangeSet& changes);
  // Makes the dead letter for `record`; it is staged with the batch being
  // applied and published after it commits (StageDeadLetters).
  void AddDeadLetter(const bus::Record& record, const absl::Status& reason);
  // Numbers the batch's letters, stages them in `batch` with the meta that
  // remembers them; PublishStagedLetters after the commit.
  void StageDeadLetters(storage::StateBatch& batch);
  void PublishStagedLetters();
  // After a rebuild: stages in the new store, and publishes, the letters
  // the damaged store (moved to `moved_dir`) still held pending. The
  // rebuild replays their records without lettering them again, so
  // without this a letter not yet acknowledged when the store broke was
  // lost. Best effort: a store that no longer opens or scans, or a letter
  // that does not parse, is logged and skipped; a letter the failed start
  // already produced goes out twice (letters are at least once). An error
  // means the new store refused the commit.
  absl::Status SalvagePendingLetters(const std::string& moved_dir);
  // Flushes the shared producer when an outbox waits for acknowledgement
  // (at most every `min_interval_ms`, or its backoff), and tells both;
  // when `idle` (no input this time), also commits the deletion of the
  // copies acknowledged since the last commit.
  void FlushOutboxes(int min_interval_ms, int timeout_ms, bool idle);
  void OnProducerFlushed(bool ok);
  void StageAcknowledgedCopies(storage::StateBatch& batch);
  void ApplyDecisions(cluster::ChangeSet& changes);
  // Applies one round's decisions in the fixed order (see the .cc) and
  // records each outcome in `out` (round_id and graph_epoch set by the
  // caller); also replays a ledger's RoundApplied.
  void ApplyRound(std::vector<v1::PlacementDecision> decisions,
                  v1::RoundApplied& out, cluster::ChangeSet& changes);
  // Lets the policy turn `changes` into network changes, or switches the
  // policy a SetPolicy event asked for (the rebuild covers `changes`).
  absl::Status SyncNetwork(const cluster::ChangeSet& changes);
  // Deterministic mode: lets the policy turn the state changes of one event
  // or one round into network changes at once (or switches the policy a
  // SetPolicy event asked for), instead of once per polled batch. Node ids
  // go to the lowest free slot, so a batch-wide sync would make the network
  // depend on where polls happened to split the log; synced per event and
  // per round, it depends on the log alone. The first failure is kept in
  // sync_error_ and returned by the next CommitChanges. No-op otherwise.
  void SyncNowIfDeterministic(const cluster::ChangeSet& changes);
  // Time-dependent policies re-price their arcs; returns the changes.
  absl::StatusOr<std::vector<flow::GraphChange>> RefreshPrices();
  // The time the state and the policy see: the clock, or in deterministic
  // mode the log's time (see GraphManagerOptions::cut_at_ticks).
  [[nodiscard]] int64_t StateNowMicros() const;
  // Replaces the policy and rebuilds the whole network under it (every
  // node removed, every entity synced again), recording the difference in
  // the change log. Internal if the new policy fails to build the network.
  absl::Status SwitchPolicy(const std::string& name);
  void StageMetaWithTime(storage::StateBatch& batch);
  // `ledger`: the record describing this batch (nullptr: nothing to
  // record, e.g. only placement records that completed no round).
  absl::Status CommitChanges(const cluster::ChangeSet& changes,
                             storage::StateBatch batch,
                             v1::LedgerRecord* ledger);
  absl::Status MaybeCutRound();
  // MaybeCutRound's steps: the round's header; the cut made durable (next
  // round id, the round in flight, the ledger's cut record, the refreshed
  // prices) before any part leaves; the parts produced and flushed (the
  // first error).
  [[nodiscard]] v1::SolverRound RoundHeader(RoundId round_id,
                                            bool snapshot) const;
  absl::Status CommitCut(RoundId round_id, bool snapshot,
                         const std::vector<flow::GraphChange>& refreshed,
                         int64_t started_us);
  absl::Status PublishRoundParts(const std::vector<v1::SolverRound>& parts);
  // Starts collecting the answer of `round_id` (cut by `graph_epoch`).
  void ExpectRound(RoundId round_id, GraphEpoch graph_epoch);
  // Stages the placements offsets a restart must resume from: the held
  // offset where a partition has one (InFlightRound), else the next offset
  // to consume.
  void StagePlacementOffsets(storage::StateBatch& batch) const;
  void CheckRoundTimeout();
  void MaybeWriteStatus(bool force);
  // The gauges, refreshed with the status file.
  void UpdateMetricGauges();
  // Fenced by a higher epoch, or the lease is lost: the status file's
  // role and the flowsched_active gauge.
  [[nodiscard]] bool standby() const;
  [[nodiscard]] v1::GraphManagerStatus BuildStatus() const;
  // The meta's ids, typed (meta_ is the stored record and keeps raw ones).
  [[nodiscard]] GraphEpoch epoch() const { return GraphEpoch(meta_.epoch()); }
  [[nodiscard]] WorkerEpoch solver_epoch() const {
    return WorkerEpoch(meta_.solver_epoch());
  }

  GraphManagerOptions options_;
  const Clock& clock_;
  // Null without a registry: nothing recorded.
  std::unique_ptr<metrics::GraphManagerMetrics> metrics_;
  std::unique_ptr<storage::StateStore> store_;
  // Set when the manager makes its own bus (a KafkaBus); bus_ is it or
  // the one Create() was given.
  std::unique_ptr<bus::Bus> owned_bus_;
  bus::Bus* bus_ = nullptr;
  std::unique_ptr<bus::RecordSink> producer_;
  std::unique_ptr<bus::RecordSource> consumer_;
  std::unique_ptr<DeadLetterOutbox> dead_letters_;
  std::unique_ptr<LedgerPublisher> ledger_;
  // The ledger record of the batch being applied (steps in order).
  v1::LedgerRecord batch_ledger_;
  // Replaying the ledger: no dead letters, no ledger records published.
  bool replaying_ = false;
  bus::LeaderLease* lease_ = nullptr;
  // A higher epoch's claim appeared in the ledger: step down at once.
  std::optional<GraphEpoch> fenced_by_epoch_;
  // Open() failed because the store is damaged (Create moves it aside).
  bool damaged_store_ = false;
  // Clock mode: the time of the batch being applied, one per batch so the
  // ledger can carry it (see StateNowMicros).
  int64_t batch_time_us_ = 0;
  cluster::EventDecoder decoder_;
  cluster::ClusterState state_;
  core::PolicyNetwork policy_network_;
  flow::FlowNetwork& network_ = policy_network_.network();
  // Set by a SetPolicy event; takes effect when the batch commits, before
  // the next round is cut (empty: no switch pending).
  std::string requested_policy_;
  absl::Status sync_error_;
  uint64_t policy_switches_ = 0;
  v1::GraphManagerMeta meta_;
  RoundCollector collector_;
  int32_t placement_partitions_ = 0;
  int32_t event_partitions_ = 0;
  // The rounds' state: when the next one is due, its kind and backoff,
  // and the round in flight. Its fields of meta_ (cut_pending,
  // events_since_cut, in_flight_*) are written from it by
  // StageMetaWithTime only, so read them here, not there.
  RoundTracker rounds_{options_.cut_options()};
  // Next offset to consume per (topic, partition). As committed, except
  // for placements partitions with a held offset (InFlightRound).
  std::map<std::pair<std::string, int32_t>, int64_t> next_offsets_;
  // Placements records delivered again at an offset already handled.
  uint64_t placements_redelivered_ = 0;
  // The dead letters of the batch being applied, in order; then, staged,
  // what to publish once it committed.
  std::vector<v1::DeadLetter> batch_letters_;
  std::vector<OutboxEntry> staged_letters_;
  // The consumer's assignment leaves the events partitions out.
  bool events_paused_ = false;

  // Network changes since the last published round.
  std::vector<flow::GraphChange> pending_changes_;
  // Tasks the last applied round left unscheduled (pending-tasks gauge).
  uint64_t last_unscheduled_ = 0;
  std::string digest_at_start_;
  std::string digest_at_stop_;
  int64_t last_status_steady_us_ = 0;
  // Counters kept only in memory (per epoch) and timing history.
  uint64_t rounds_published_ = 0;
  uint64_t rounds_timed_out_ = 0;
  uint64_t snapshots_published_ = 0;
  std::vector<double> solve_ms_;
  std::vector<double> round_trip_ms_;
};

}  // namespace flowsched::graph_manager
