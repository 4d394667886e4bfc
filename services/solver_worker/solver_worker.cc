#include "services/solver_worker/solver_worker.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flowsched/v1/placements.pb.h"
#include "flowsched/v1/rounds.pb.h"
#include "services/codec/decision_codec.h"
#include "services/codec/gang_codec.h"
#include "services/codec/round_codec.h"
#include "services/common/status_macros.h"
#include "services/core/decision_builder.h"
#include "services/metrics/decision_kind.h"
#include "spdlog/spdlog.h"

namespace flowsched::solver_worker {
namespace {

constexpr int kMetadataTimeoutMs = 10'000;
constexpr int kFlushTimeoutMs = 10'000;

// Unique per instance, and roughly ordered by start time: wall-clock
// microseconds times 1024 plus 10 random bits, so two workers started in the
// same microsecond (or a clock step back) still differ. The graph manager
// picks the current epoch explicitly, so nothing relies on the order.
WorkerEpoch NewWorkerEpoch(int64_t now_us) {
  std::random_device random;
  return WorkerEpoch(static_cast<uint64_t>(now_us) * 1024 + (random() & 1023U));
}

double Seconds(double millis) { return millis / 1000.0; }

}  // namespace

SolverWorker::SolverWorker(SolverWorkerOptions options, const Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      metrics_(options_.metrics_registry != nullptr
                   ? std::make_unique<metrics::SolverWorkerMetrics>(
                         *options_.metrics_registry)
                   : nullptr) {}

SolverWorker::~SolverWorker() { consumer_.reset(); }

absl::StatusOr<std::unique_ptr<SolverWorker>> SolverWorker::Create(
    SolverWorkerOptions options, const Clock& clock) {
  auto worker = std::unique_ptr<SolverWorker>(
      new SolverWorker(std::move(options), clock));
  FLOWSCHED_RETURN_IF_ERROR(worker->Open());
  return worker;
}

absl::Status SolverWorker::Open() {
  FLOWSCHED_ASSIGN_OR_RETURN(round_solver_,
                             core::RoundSolver::Create(options_.algorithm));
  epoch_ = NewWorkerEpoch(clock_.NowMicros());
  if (metrics_) {
    metrics_->epoch.Set(static_cast<double>(epoch_.value()));
    metrics_->active.Set(0);
  }
  bus::KafkaOptions kafka = options_.kafka;
  kafka.client_id = "flowsched-solver-worker";
  bus::KafkaOptions consumer_kafka = kafka;
  if (options_.standby) {
    // Defaults only: --kafka settings still win. Heartbeats well inside the
    // session so a live member never looks dead.
    consumer_kafka.extra.try_emplace(
        "session.timeout.ms", std::to_string(options_.session_timeout_ms));
    consumer_kafka.extra.try_emplace(
        "heartbeat.interval.ms",
        std::to_string(std::max(100, options_.session_timeout_ms / 6)));
    // The partition stays with its holder when a member joins (a restarted
    // worker does not take over from a healthy one).
    consumer_kafka.extra.try_emplace("partition.assignment.strategy",
                                     "cooperative-sticky");
  }
  FLOWSCHED_ASSIGN_OR_RETURN(producer_, bus::Producer::Create(kafka));
  FLOWSCHED_ASSIGN_OR_RETURN(
      consumer_,
      bus::Consumer::Create(consumer_kafka, options_.standby
                                                ? StandbyGroup()
                                                : "flowsched-solver-worker"));
  dead_letters_ = std::make_unique<bus::DeadLetterPublisher>(
      *producer_, options_.topics.dead_letters, "solver-worker", &clock_);
  FLOWSCHED_ASSIGN_OR_RETURN(
      placement_partitions_,
      producer_->PartitionCount(options_.topics.placements,
                                kMetadataTimeoutMs));
  if (options_.standby) return JoinStandbyGroup();
  active_ = true;
  if (metrics_) metrics_->active.Set(1);
  // Only rounds cut from now on matter; older ones are superseded by the
  // snapshot the resync request below asks for.
  FLOWSCHED_ASSIGN_OR_RETURN(
      auto marks,
      consumer_->Watermarks(options_.topics.rounds, 0, kMetadataTimeoutMs));
  FLOWSCHED_RETURN_IF_ERROR(
      consumer_->Assign({{options_.topics.rounds, 0, marks.second}}));
  spdlog::info("solver worker epoch {} using {}; rounds from offset {}",
               epoch_.value(), round_solver_->name(), marks.second);
  resync_backoff_ms_ = options_.resync_interval_ms;
  RequestResync("solver worker started");
  return absl::OkStatus();
}

absl::Status SolverWorker::JoinStandbyGroup() {
  bus::RebalanceListener listener;
  // Only rounds cut from now on matter (as at a plain start): the snapshot
  // the claim asks for is published after this offset.
  listener.start_offset = [this](const std::string& topic, int32_t partition) {
    auto marks = consumer_->Watermarks(topic, partition, kMetadataTimeoutMs);
    return marks.ok() ? marks->second : bus::kOffsetEnd;
  };
  listener.changed =
      [this](bool assigned,
             const std::vector<bus::TopicPartitionOffset>& partitions) {
        for (const bus::TopicPartitionOffset& p : partitions) {
          if (p.topic == options_.topics.rounds && p.partition == 0) {
            OnRoundsPartition(assigned);
          }
        }
      };
  FLOWSCHED_RETURN_IF_ERROR(
      consumer_->Subscribe({options_.topics.rounds}, std::move(listener)));
  spdlog::info("solver worker epoch {} using {}; standing by in group {}",
               epoch_.value(), round_solver_->name(), StandbyGroup());
  return absl::OkStatus();
}

std::string SolverWorker::StandbyGroup() const {
  // Per rounds topic, so deployments with different topic prefixes on one
  // broker do not rebalance each other.
  return options_.topics.rounds + ".solvers";
}

void SolverWorker::OnRoundsPartition(bool assigned) {
  // Either way the replica starts over: while standing by it missed rounds.
  active_ = assigned;
  if (metrics_) metrics_->active.Set(assigned ? 1 : 0);
  rounds_next_offset_ = -1;
  synced_ = false;
  unsolved_ = false;
  assembler_.Reset();
  if (assigned) {
    ++stats_.takeovers;
    claim_pending_ = true;
    spdlog::info("solver worker epoch {} is now active", epoch_.value());
  } else {
    claim_pending_ = false;
    spdlog::info(
        "solver worker epoch {} lost the rounds partition; standing "
        "by",
        epoch_.value());
  }
}

void SolverWorker::StandBy(const v1::SolverRound& round) {
  ++stats_.rounds_not_addressed;
  if (synced_) {
    spdlog::warn(
        "round {} is addressed to solver epoch {}, not {}: another "
        "worker is current; not solving",
        round.round_id(), round.solver_epoch(), epoch_.value());
  }
  synced_ = false;
  unsolved_ = false;
  // A worker that still holds the partition claims the rounds back, but
  // only after a backoff: a zombie learns first that it lost the partition,
  // and a claim just sent is not answered twice.
  last_resync_steady_us_ = SteadyMicros();
}

absl::Status SolverWorker::Run(const std::atomic<bool>& stop) {
  while (!stop.load()) {
    for (const bus::Record& record :
         consumer_->PollOrBackOff(64, options_.poll_timeout_ms)) {
      if (!active_) continue;
      rounds_next_offset_ = record.offset + 1;
      HandleRoundRecord(record);
    }
    MaybeUpdateLag();
    if (claim_pending_) {
      claim_pending_ = false;
      resync_backoff_ms_ = options_.resync_interval_ms;
      RequestResync("became the active solver worker");
    }
    // Several queued rounds are applied in order, then solved once.
    if (unsolved_) SolveAndPublish();
    if (synced_) {
      resync_backoff_ms_ = options_.resync_interval_ms;
    } else if (active_ && SteadyMicros() - last_resync_steady_us_ >
                              int64_t{resync_backoff_ms_} * 1000) {
      RequestResync("still waiting for a snapshot");
      resync_backoff_ms_ = std::min(resync_backoff_ms_ * 2, 30'000);
    }
  }
  producer_->Flush(kFlushTimeoutMs).IgnoreError();  // best effort at exit
  spdlog::info("solver worker stopped after {} rounds", stats_.rounds_solved);
  return absl::OkStatus();
}

void SolverWorker::HandleRoundRecord(const bus::Record& record) {
  v1::SolverRound round;
  if (!round.ParseFromString(record.value)) {
    spdlog::warn("undecodable round at {}/{}@{}", record.topic,
                 record.partition, record.offset);
    if (metrics_) {
      metrics_->dead_letters.Count(absl::StatusCode::kInvalidArgument);
    }
    dead_letters_
        ->Publish(record, absl::InvalidArgumentError("undecodable SolverRound"))
        .IgnoreError();  // logged; the record is skipped either way
    return;
  }
  // Epoch fencing: a graph manager that lost its leadership (paused,
  // partitioned, restarted by hand) may still publish; once a higher epoch
  // was seen, rounds of lower ones are ignored.
  if (GraphEpoch(round.epoch()) < max_graph_epoch_) {
    spdlog::warn("ignoring round {} of fenced graph manager epoch {} (seen {})",
                 round.round_id(), round.epoch(), max_graph_epoch_.value());
    return;
  }
  max_graph_epoch_ = GraphEpoch(round.epoch());
  const RoundId part_round(round.round_id());
  const uint32_t part = round.part();
  switch (assembler_.Add(std::move(round))) {
    case codec::RoundAssembler::Progress::kIncomplete:
      return;
    case codec::RoundAssembler::Progress::kMissingPart:
      // The graph manager died mid-round, or this worker started in the
      // middle of one. The replica may be behind: resync.
      spdlog::warn("round {} part {} arrived without its predecessors",
                   part_round.value(), part);
      if (synced_) {
        synced_ = false;
        RequestResync("a round arrived incomplete");
      }
      return;
    case codec::RoundAssembler::Progress::kComplete:
      break;
  }
  // A local: a large snapshot is freed as soon as it is applied.
  const v1::SolverRound whole = assembler_.TakeRound();
  const WorkerEpoch addressed(whole.solver_epoch());
  if (addressed != WorkerEpoch() && addressed != epoch_) {
    StandBy(whole);
    return;
  }
  absl::Status applied = ApplyRound(whole);
  if (!applied.ok()) {
    synced_ = false;
    unsolved_ = false;
    spdlog::warn("cannot apply a round: {}", applied.ToString());
    RequestResync(std::string(applied.message()));
  }
}

absl::Status SolverWorker::ApplyRound(const v1::SolverRound& round) {
  if (!round.snapshot() &&
      (!synced_ || GraphEpoch(round.epoch()) != graph_epoch_ ||
       RoundId(round.base_round_id()) != round_id_)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "delta ", round.round_id(), " of epoch ", round.epoch(),
        " builds on round ", round.base_round_id(), "; replica has round ",
        round_id_.value(), " of epoch ", graph_epoch_.value()));
  }
  if (round.snapshot()) {
    round_solver_->Reset();
  }
  // Any error below leaves the replica half-changed; the caller marks it
  // unsynced and asks for a snapshot, which rebuilds it from empty.
  for (const v1::GraphChange& message : round.changes()) {
    FLOWSCHED_ASSIGN_OR_RETURN(flow::GraphChange change,
                               codec::DecodeChange(message));
    FLOWSCHED_RETURN_IF_ERROR(round_solver_->Apply(change));
  }
  synced_ = true;
  deterministic_ = round.deterministic();
  gangs_ = codec::DecodeGangs(round);
  round_id_ = RoundId(round.round_id());
  graph_epoch_ = GraphEpoch(round.epoch());
  addressed_epoch_ = WorkerEpoch(round.solver_epoch());
  unsolved_ = true;
  return absl::OkStatus();
}

void SolverWorker::RequestResync(const std::string& reason) {
  last_resync_steady_us_ = SteadyMicros();
  v1::PlacementRecord record;
  record.mutable_resync_request()->set_epoch(epoch_.value());
  record.mutable_resync_request()->set_have_round_id(round_id_.value());
  record.mutable_resync_request()->set_reason(reason);
  absl::Status sent = producer_->Produce(options_.topics.placements, 0,
                                         "resync", record.SerializeAsString());
  if (sent.ok()) sent = producer_->Flush(kFlushTimeoutMs);
  if (!sent.ok()) {
    spdlog::warn("resync request not sent: {}", sent.ToString());
    return;
  }
  ++stats_.resyncs_requested;
}

absl::Status SolverWorker::ProduceDecisions(
    const std::vector<core::Decision>& decisions,
    std::vector<uint32_t>& per_partition) {
  const auto partitions = static_cast<uint32_t>(placement_partitions_);
  per_partition.assign(partitions, 0);
  absl::Status sent;
  for (const core::Decision& d : decisions) {
    const uint64_t keyed_machine =
        d.machine.value() != 0 ? d.machine.value() : d.previous.value();
    const auto partition = static_cast<uint32_t>(keyed_machine % partitions);
    v1::PlacementRecord record;
    v1::PlacementDecision* out = record.mutable_decision();
    out->set_round_id(round_id_.value());
    out->set_epoch(epoch_.value());
    out->set_graph_epoch(graph_epoch_.value());
    codec::EncodeDecision(d, *out);
    out->set_idempotency_key(core::IdempotencyKey(round_id_, d.task));
    sent.Update(producer_->Produce(
        options_.topics.placements, static_cast<int32_t>(partition),
        absl::StrCat("machine/", keyed_machine), record.SerializeAsString()));
    ++per_partition[partition];
  }
  return sent;
}

absl::Status SolverWorker::ProduceRoundMarkers(
    const core::SolvedRound& solved,
    const std::vector<uint32_t>& per_partition) {
  const auto partitions = static_cast<uint32_t>(placement_partitions_);
  absl::Status sent;
  for (uint32_t p = 0; p < partitions; ++p) {
    v1::PlacementRecord record;
    v1::RoundComplete* marker = record.mutable_round_complete();
    marker->set_round_id(round_id_.value());
    marker->set_epoch(epoch_.value());
    marker->set_graph_epoch(graph_epoch_.value());
    marker->set_solver_epoch(addressed_epoch_.value());
    marker->set_partition(p);
    marker->set_partition_decisions(per_partition[p]);
    marker->set_total_decisions(static_cast<uint32_t>(solved.decisions.size()));
    marker->set_partition_count(partitions);
    marker->set_total_cost(solved.total_cost);
    marker->set_solve_ms(solved.solve_ms);
    marker->set_algorithm(solved.algorithm);
    marker->set_tasks_placed(solved.tasks_placed);
    marker->set_tasks_unscheduled(solved.tasks - solved.tasks_placed);
    sent.Update(producer_->Produce(options_.topics.placements,
                                   static_cast<int32_t>(p), "round-complete",
                                   record.SerializeAsString()));
  }
  return sent;
}

void SolverWorker::SolveAndPublish() {
  unsolved_ = false;
  core::SolvedRound solved = round_solver_->Solve(deterministic_, gangs_);
  if (solved.replica_lost) synced_ = false;  // a snapshot rebuilds it
  if (metrics_) metrics_->phase_solve.Observe(Seconds(solved.solve_ms));
  if (!solved.verdict.ok()) {
    if (metrics_) metrics_->rounds_rejected.Increment();
    // Nothing unchecked is published. The graph manager times the round
    // out and sends a snapshot.
    ++stats_.rounds_rejected;
    spdlog::error("round {} not published: {}", round_id_.value(),
                  solved.verdict.ToString());
    return;
  }

  if (metrics_) {
    metrics_->phase_check.Observe(Seconds(solved.check_ms));
    metrics_->phase_extract.Observe(Seconds(solved.extract_ms));
  }
  const int64_t publish_start_us = SteadyMicros();
  const std::vector<core::Decision>& decisions = solved.decisions;
  std::vector<uint32_t> per_partition;
  absl::Status sent = ProduceDecisions(decisions, per_partition);
  sent.Update(ProduceRoundMarkers(solved, per_partition));
  sent.Update(producer_->Flush(kFlushTimeoutMs));
  if (!sent.ok()) {
    spdlog::warn("round {} publication incomplete: {}", round_id_.value(),
                 sent.ToString());
    return;
  }
  if (metrics_) {
    metrics_->phase_publish.Observe(
        static_cast<double>(SteadyMicros() - publish_start_us) / 1e6);
    metrics_->rounds_published.Increment();
    for (const core::Decision& d : decisions) {
      metrics_->CountPublished(metrics::KindOf(d.action));
    }
  }
  ++stats_.rounds_solved;
  stats_.decisions_published += decisions.size();
  spdlog::info(
      "round {}: {} nodes, {} arcs, cost {}, {} decisions, {} placed, "
      "solve {:.2f} ms, {} passes, {} gangs withdrawn{}",
      round_id_.value(), round_solver_->network().node_count(),
      round_solver_->network().arc_count(), solved.total_cost, decisions.size(),
      solved.tasks_placed, solved.solve_ms, solved.passes,
      solved.gangs_withdrawn.size(),
      solved.held ? ", room held for a starved gang" : "");
}

void SolverWorker::MaybeUpdateLag() {
  constexpr int64_t kLagIntervalUs = 1'000'000;
  const int64_t now = SteadyMicros();
  if (!metrics_ || !active_ || now - last_lag_steady_us_ < kLagIntervalUs) {
    return;
  }
  last_lag_steady_us_ = now;
  auto marks = consumer_->CachedWatermarks(options_.topics.rounds, 0);
  if (!marks.ok()) return;  // not fetched from yet
  const int64_t consumed =
      rounds_next_offset_ >= 0 ? rounds_next_offset_ : marks->second;
  metrics_->consumer_lag.Set(options_.topics.rounds, 0,
                             std::max<int64_t>(0, marks->second - consumed));
}

}  // namespace flowsched::solver_worker
