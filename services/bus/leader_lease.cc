#include "services/bus/leader_lease.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "fmt/format.h"
#include "services/common/status_macros.h"
#include "spdlog/spdlog.h"

namespace flowsched::bus {
namespace {

// Cooperative-sticky rebalancing: a member joining (a standby, or an
// ex-leader coming back) never moves the lease away from a live holder,
// so it does not bounce between instances. Poll() reads the assignment
// back after serving callbacks.
void OnRebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                 rd_kafka_topic_partition_list_t* partitions,
                 void* /*opaque*/) {
  const bool cooperative =
      std::string_view(rd_kafka_rebalance_protocol(rk)) == "COOPERATIVE";
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    if (cooperative) {
      rd_kafka_error_t* error = rd_kafka_incremental_assign(rk, partitions);
      if (error != nullptr) rd_kafka_error_destroy(error);
    } else {
      rd_kafka_assign(rk, partitions);
    }
  } else if (cooperative) {
    rd_kafka_error_t* error = rd_kafka_incremental_unassign(rk, partitions);
    if (error != nullptr) rd_kafka_error_destroy(error);
  } else {
    rd_kafka_assign(rk, nullptr);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<LeaderLease>> LeaderLease::Create(
    const KafkaOptions& options, const std::string& topic,
    const std::string& group_id, int session_timeout_ms) {
  if (options.brokers.empty()) {
    return absl::InvalidArgumentError("KafkaOptions.brokers is empty");
  }
  const int heartbeat_ms = std::max(100, session_timeout_ms / 6);
  FLOWSCHED_ASSIGN_OR_RETURN(
      KafkaConfPtr conf,
      BuildKafkaConfig(
          options,
          {
              {"group.id", group_id},
              {"enable.auto.commit", "false"},
              {"partition.assignment.strategy", "cooperative-sticky"},
              {"session.timeout.ms", std::to_string(session_timeout_ms)},
              {"heartbeat.interval.ms", std::to_string(heartbeat_ms)},
              // The service loop polls often; a loop stuck longer
              // than this gives the lease up.
              {"max.poll.interval.ms",
               std::to_string(std::max(30'000, session_timeout_ms))},
              {"reconnect.backoff.ms", "100"},
              {"reconnect.backoff.max.ms", "2000"},
          }));
  auto lease = std::make_unique<LeaderLease>(Token());
  rd_kafka_conf_set_rebalance_cb(conf.get(), OnRebalance);
  std::array<char, 512> errstr{};
  rd_kafka_t* rk =
      rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), errstr.data(), errstr.size());
  if (rk == nullptr) {
    return absl::InvalidArgumentError(
        fmt::format("cannot create the lease consumer: {}", errstr.data()));
  }
  static_cast<void>(conf.release());  // rd_kafka_new took ownership
  lease->rk_.reset(rk);
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* topics =
      rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, topic.c_str(),
                                    RD_KAFKA_PARTITION_UA);
  const rd_kafka_resp_err_t err = rd_kafka_subscribe(rk, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  FLOWSCHED_RETURN_IF_ERROR(
      KafkaErrorToStatus(err, fmt::format("subscribe to {}", topic)));
  return lease;
}

LeaderLease::~LeaderLease() {
  if (rk_ != nullptr) rd_kafka_consumer_close(rk_.get());
}

bool LeaderLease::Poll(int timeout_ms) {
  rd_kafka_message_t* message = rd_kafka_consumer_poll(rk_.get(), timeout_ms);
  if (message != nullptr) {
    if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR &&
        message->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      spdlog::debug("leader lease: {}", rd_kafka_message_errstr(message));
    }
    rd_kafka_message_destroy(message);
  }
  rd_kafka_topic_partition_list_t* assignment = nullptr;
  bool held = false;
  if (rd_kafka_assignment(rk_.get(), &assignment) ==
          RD_KAFKA_RESP_ERR_NO_ERROR &&
      assignment != nullptr) {
    for (int i = 0; i < assignment->cnt; ++i) {
      if (assignment->elems[i].partition == 0) held = true;
    }
  }
  if (assignment != nullptr) rd_kafka_topic_partition_list_destroy(assignment);
  if (held != held_) {
    spdlog::info("leader lease {}", held ? "acquired" : "lost");
  }
  held_ = held;
  return held_;
}

}  // namespace flowsched::bus
