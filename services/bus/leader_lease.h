#pragma once

// Leadership among instances of one service through a Kafka consumer group:
// every instance joins group `group_id` subscribed to a 1-partition topic;
// the group coordinator gives that partition to exactly one live member,
// which is the leader. A member that dies (SIGKILL) stops heartbeating and
// loses the partition after session.timeout.ms (6000 ms by default here),
// so a standby takes over within about that plus a rebalance. Nothing is
// ever produced to or consumed from the topic; it only names the lease.
//
// The lease alone does not stop a paused or partitioned ex-leader from
// publishing for a moment: pair it with epoch fencing (the new leader
// claims a higher epoch; everyone ignores lower ones).
//
// Not thread-safe: one thread calls Poll().

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "services/bus/kafka_options.h"

namespace flowsched::bus {

class LeaderLease {
 public:
  static absl::StatusOr<std::unique_ptr<LeaderLease>> Create(
      const KafkaOptions& options, const std::string& topic,
      const std::string& group_id, int session_timeout_ms = 6000);

  LeaderLease(const LeaderLease&) = delete;
  LeaderLease& operator=(const LeaderLease&) = delete;
  // Leaves the group at once, so a standby need not wait for the session
  // timeout after a clean stop.
  ~LeaderLease();

  // Serves heartbeats and rebalances for up to timeout_ms; returns whether
  // this member holds the lease now. Call it at least every few seconds.
  bool Poll(int timeout_ms);
  [[nodiscard]] bool held() const { return held_; }

 private:
  struct Token {
    explicit Token() = default;
  };

 public:
  explicit LeaderLease(Token /*token*/) {}

 private:
  KafkaHandlePtr rk_;
  bool held_ = false;
};

}  // namespace flowsched::bus
