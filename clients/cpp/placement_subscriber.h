#pragma once

// PlacementSubscriber: the placements topic's consumer contract behind one
// callback, the C++ twin of clients/python/flowsched_client/subscriber.py
// (both modes: placements only, or confirmed by the ledger).
// - assign()s every placements partition (a round spans them all; no
//   rebalancing); the consumer group only stores offsets. Starts at the
//   group's committed offsets, else the beginning (or the end: start_latest).
// - on_round is called once per complete round (RoundAssembler's rules:
//   round markers of every partition, current solver epoch only, fenced
//   graph epochs, duplicates dropped by idempotency key), in round order.
// - After on_round returns OK, commits synchronously each partition's
//   position, never past the first record of a round not yet delivered. If
//   on_round fails, nothing is committed, Poll returns its status and the
//   round is offered again (next Poll, or the group's next subscriber).
// - confirm_with_ledger: also reads the ledger topic from its beginning
//   (every start) and delivers a round only once the graph manager applied
//   it, its rejected decisions in Round::stale (never acted on).
// - on_stale (placements-only mode): rounds are still delivered at once;
//   the subscriber also reads the ledger (as confirm_with_ledger does) and
//   calls on_stale with the decisions the graph manager rejected in a
//   round, after that round's on_round (README.md, "Stale reports").
// Exactly once per group across clean stops; a crash between on_round and
// the commit redelivers: act idempotently on idempotency_key. One thread.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "clients/cpp/round_assembler.h"
#include "services/bus/kafka_options.h"

namespace flowsched::client {

using OnStale = std::function<absl::Status(const StaleReport&)>;

struct SubscriberOptions {
  bus::KafkaOptions kafka;
  std::string group;  // required: where offsets are committed
  std::string topic_prefix = "flowsched.";
  bool start_latest = false;  // without committed offsets: the end
  bool confirm_with_ledger = false;
  // Placements-only mode only (with confirm_with_ledger: InvalidArgument).
  // Called once a round delivered at once turns out to have decisions the
  // graph manager rejected as stale: at least once per such round (keyed
  // by idempotency_key; ignore keys never acted on), after its on_round.
  // An error: Poll returns it, the report is offered again, and the
  // group's ledger offset is not committed past it.
  OnStale on_stale;
  int metadata_timeout_ms = 10'000;
};

class PlacementSubscriber {
 public:
  using OnRound = std::function<absl::Status(const Round&)>;

  // Finds the placements partitions, reads the group's committed offsets
  // and assigns. InvalidArgument for a missing group or broker list, or
  // on_stale with confirm_with_ledger (before connecting); NotFound if the
  // topic does not exist, Unavailable on broker errors.
  static absl::StatusOr<std::unique_ptr<PlacementSubscriber>> Create(
      SubscriberOptions options, OnRound on_round);

  PlacementSubscriber(const PlacementSubscriber&) = delete;
  PlacementSubscriber& operator=(const PlacementSubscriber&) = delete;
  ~PlacementSubscriber();  // Close()

  // Reads what arrives within timeout_ms (up to max_records), delivers
  // every round that became complete, committing after each (and every
  // stale report due, committing after each). Returns the rounds
  // delivered, or on_round's, on_stale's or the commit's error.
  absl::StatusOr<int> Poll(int timeout_ms, size_t max_records = 500);

  // Polls until stop() holds or timeout_ms passed; returns rounds delivered.
  absl::StatusOr<int> Run(const std::function<bool()>& stop, int timeout_ms,
                          int poll_timeout_ms = 200);

  // Commits what is settled and leaves. Idempotent.
  absl::Status Close();

  [[nodiscard]] const AssemblerStats& stats() const {
    return assembler_.stats();
  }
  [[nodiscard]] int partition_count() const { return partition_count_; }

  struct Token {
    explicit Token() = default;
  };
  PlacementSubscriber(Token /*token*/, int partition_count,
                      bool confirm_with_ledger, OnRound on_round,
                      OnStale on_stale)
      : partition_count_(partition_count),
        assembler_(partition_count, confirm_with_ledger),
        on_round_(std::move(on_round)),
        on_stale_(std::move(on_stale)) {}

 private:
  absl::Status Commit();
  absl::StatusOr<int> Deliver();

  bus::KafkaHandlePtr rk_;
  std::string topic_;
  std::string ledger_topic_;  // empty unless confirm_with_ledger or on_stale
  int partition_count_;
  RoundAssembler assembler_;
  OnRound on_round_;
  OnStale on_stale_;
  int64_t ledger_committed_ = -1;         // on_stale: the group's ledger offset
  std::map<int32_t, int64_t> position_;   // next offset to read
  std::map<int32_t, int64_t> committed_;  // as committed (or found)
  bool closed_ = false;
};

}  // namespace flowsched::client
