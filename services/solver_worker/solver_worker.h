#pragma once

// The solver worker service: mirrors the graph manager's flow network from
// the rounds topic (snapshots and deltas), solves each round with a
// min-cost flow algorithm, checks the result (feasible, optimal) and only
// then publishes the round's decisions, keyed by machine, followed by a
// RoundComplete marker in every placements partition.
//
// When it cannot apply a delta (it started late, missed a round, or the
// graph manager restarted) it asks for a snapshot with a ResyncRequest.
//
// Failover (options.standby): several workers join one Kafka consumer group
// on the one-partition rounds topic; the member the group gives the
// partition is active, the others stand by. A member that gets the
// partition reads from its end and claims the rounds with a ResyncRequest;
// the graph manager then addresses rounds to that worker's epoch
// (SolverRound.solver_epoch) and applies answers from it alone. A worker
// that sees a round addressed to another epoch stops solving: it is no
// longer current (a paused or partitioned instance that came back).
//
// Lifecycle: Create() connects; Run() loops until the stop flag is set.
// Thread-safety: single-threaded.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/bus/consumer.h"
#include "services/bus/dead_letter_publisher.h"
#include "services/bus/kafka_options.h"
#include "services/bus/producer.h"
#include "services/bus/topics.h"
#include "services/codec/round_parts.h"
#include "services/common/clock.h"
#include "services/common/strong_id.h"
#include "services/core/round_solver.h"
#include "services/metrics/solver_worker_metrics.h"

namespace flowsched::v1 {
class SolverRound;
}

namespace flowsched::solver_worker {

struct SolverWorkerOptions {
  bus::KafkaOptions kafka;
  bus::TopicNames topics;
  // "incremental" (default): repair the previous optimal flow each round,
  // cold starts by cost scaling. Any solver::SolverNames() entry solves
  // every round from scratch with that algorithm instead.
  std::string algorithm = "incremental";
  int poll_timeout_ms = 20;
  // First wait before asking again for a snapshot; doubles up to 30 s
  // while none comes (a deterministic graph manager sends the snapshot with
  // its next cut, which may be far off).
  int resync_interval_ms = 1000;
  // Active/standby through the consumer group <rounds topic>.solvers
  // instead of reading the rounds partition unconditionally. Every worker
  // sharing a rounds topic must use it.
  bool standby = false;
  // Group session timeout: a killed active worker's partition moves to a
  // standby this long after its last heartbeat (Kafka 0.9's broker minimum
  // is 6000).
  int session_timeout_ms = 6000;
  // Where the metrics go (not owned; must outlive the worker). Null: none
  // are recorded (the off switch the metrics cost is measured against).
  prometheus::Registry* metrics_registry = nullptr;
};

struct SolverWorkerStats {
  uint64_t rounds_solved = 0;
  uint64_t rounds_rejected = 0;  // checker refused or solver failed
  uint64_t resyncs_requested = 0;
  uint64_t decisions_published = 0;
  uint64_t takeovers = 0;             // times this worker became active
  uint64_t rounds_not_addressed = 0;  // addressed to another worker epoch
};

class SolverWorker {
 public:
  // InvalidArgument for an unknown algorithm; Unavailable if the brokers
  // cannot be reached.
  static absl::StatusOr<std::unique_ptr<SolverWorker>> Create(
      SolverWorkerOptions options, const Clock& clock);

  // Leaves the consumer group first: closing the consumer reports the
  // revocation to this worker, whose members must still be alive.
  ~SolverWorker();

  absl::Status Run(const std::atomic<bool>& stop);
  [[nodiscard]] const SolverWorkerStats& stats() const { return stats_; }
  [[nodiscard]] WorkerEpoch epoch() const { return epoch_; }

 private:
  SolverWorker(SolverWorkerOptions options, const Clock& clock);
  absl::Status Open();
  absl::Status JoinStandbyGroup();
  [[nodiscard]] std::string StandbyGroup() const;
  // The consumer group gave this worker the rounds partition, or took it.
  void OnRoundsPartition(bool assigned);
  // A round addressed to another worker epoch: this one is not current.
  void StandBy(const v1::SolverRound& round);
  void HandleRoundRecord(const bus::Record& record);
  absl::Status ApplyRound(const v1::SolverRound& round);
  void RequestResync(const std::string& reason);
  void SolveAndPublish();
  // One PlacementDecision per decision, keyed and partitioned by machine;
  // `per_partition` gets the count sent to each partition. The first
  // failed Produce's status (every record is still attempted).
  absl::Status ProduceDecisions(const std::vector<core::Decision>& decisions,
                                std::vector<uint32_t>& per_partition);
  // One RoundComplete per partition, with that partition's count and the
  // round's totals. The first failed Produce's status.
  absl::Status ProduceRoundMarkers(const core::SolvedRound& solved,
                                   const std::vector<uint32_t>& per_partition);
  // The rounds partition's lag, about once a second.
  void MaybeUpdateLag();

  SolverWorkerOptions options_;
  const Clock& clock_;
  // Null without a registry: nothing recorded.
  std::unique_ptr<metrics::SolverWorkerMetrics> metrics_;
  int64_t rounds_next_offset_ = -1;  // after the last rounds record read
  int64_t last_lag_steady_us_ = 0;
  WorkerEpoch epoch_;
  std::unique_ptr<bus::Producer> producer_;
  std::unique_ptr<bus::Consumer> consumer_;
  std::unique_ptr<bus::DeadLetterPublisher> dead_letters_;
  // The replica and what solves it (core::RoundSolver).
  std::unique_ptr<core::RoundSolver> round_solver_;
  int32_t placement_partitions_ = 0;
  // Holds the rounds partition (always, without options_.standby).
  bool active_ = false;
  bool claim_pending_ = false;  // active now: ask for a snapshot

  codec::RoundAssembler assembler_;  // the parts of a split round
  bool synced_ = false;
  RoundId round_id_;             // the round the replica reflects
  GraphEpoch graph_epoch_;       // the graph manager epoch that cut it
  WorkerEpoch addressed_epoch_;  // its SolverRound.solver_epoch
  // The highest graph manager epoch any round carried (fencing).
  GraphEpoch max_graph_epoch_;
  bool unsolved_ = false;
  bool deterministic_ = false;  // the last applied round asks for it
  // The last applied round's gang jobs (SolverRound.gangs).
  std::vector<core::GangRequirement> gangs_;
  int64_t last_resync_steady_us_ = 0;
  int resync_backoff_ms_ = 0;
  SolverWorkerStats stats_;
};

}  // namespace flowsched::solver_worker
