#pragma once

// Kafka consumer. Normally without group-managed subscriptions: the caller
// assigns partitions with explicit offsets (kept in its own store) and
// polls. Subscribe() instead joins the consumer group (classic protocol) so
// that the brokers share the partitions among live members, for
// active/standby services; offsets are still never committed.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/bus/kafka_options.h"
#include "services/bus/record_source.h"

struct rd_kafka_topic_partition_list_s;

namespace flowsched::bus {

// Told about group rebalances of a Subscribe()d consumer, from inside
// Poll(), on the polling thread.
struct RebalanceListener {
  // Where to start reading a partition this member just got: an absolute
  // offset, kOffsetBeginning or kOffsetEnd. Null: kOffsetEnd.
  std::function<int64_t(const std::string& topic, int32_t partition)>
      start_offset;
  // After the assignment changed: `assigned` partitions were added (with
  // the offsets chosen) or, when false, taken away (revoked, or lost when
  // the session expired).
  std::function<void(bool assigned,
                     const std::vector<TopicPartitionOffset>& partitions)>
      changed;
};

// Not thread-safe: one thread polls a Consumer.
class Consumer final : public RecordSource {
 public:
  // group.id is set because librdkafka requires one; the group is joined
  // only by Subscribe(), and offsets are never committed
  // (enable.auto.commit=false).
  // auto.offset.reset=earliest, fetch.wait.max.ms=100,
  // fetch.error.backoff.ms=100.
  static absl::StatusOr<std::unique_ptr<Consumer>> Create(
      const KafkaOptions& options, std::string group_id);

  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;
  ~Consumer() override;

  // Replaces the whole assignment; an empty list unassigns everything.
  // The first time a topic is assigned, fetches its metadata (blocking up to
  // 2 s) so that fetching starts at once.
  absl::Status Assign(
      const std::vector<TopicPartitionOffset>& partitions) override;

  // Joins the consumer group for `topics`; the group's partitions are
  // shared among its live members (session.timeout.ms, heartbeat.interval.ms
  // and partition.assignment.strategy come from KafkaOptions.extra or the
  // defaults). Rebalances happen inside Poll() and are reported to
  // `listener`. Do not mix with Assign().
  absl::Status Subscribe(const std::vector<std::string>& topics,
                         RebalanceListener listener);

  // Returns up to max_records. Waits up to timeout_ms for the first record,
  // then returns as soon as the local queue is empty. An empty vector means
  // nothing arrived in time. Partition EOF and transient broker errors are
  // logged, not returned; a fatal client error is Internal, an
  // authorization failure Unavailable (reported after any records already
  // collected, on the next call).
  absl::StatusOr<std::vector<Record>> Poll(size_t max_records,
                                           int timeout_ms) override;

  // Poll for service loops that must ride out broker trouble: an error is
  // logged and answered with a sleep that doubles from 50 ms to 2 s while
  // errors continue, and an empty result; a success resets the backoff.
  std::vector<Record> PollOrBackOff(size_t max_records,
                                    int timeout_ms) override;

  // (low, high) watermark offsets from the partition leader; high is the
  // offset the next produced record will get.
  absl::StatusOr<std::pair<int64_t, int64_t>> Watermarks(
      std::string_view topic, int32_t partition, int timeout_ms) override;
  // (low, high) watermarks as last reported by fetch responses, without a
  // broker call (cheap enough for every status update). NotFound until the
  // partition was fetched from at least once.
  [[nodiscard]] absl::StatusOr<std::pair<int64_t, int64_t>> CachedWatermarks(
      std::string_view topic, int32_t partition) const override;

 private:
  struct Token {
    explicit Token() = default;
  };

 public:
  explicit Consumer(Token /*token*/) {}

 private:
  void WarmMetadata(const std::vector<TopicPartitionOffset>& partitions);
  // librdkafka's rebalance_cb (err is an rd_kafka_resp_err_t).
  void Rebalance(int err, rd_kafka_topic_partition_list_s* partitions);

  KafkaHandlePtr rk_;
  absl::Status pending_error_;
  int backoff_ms_ = 50;
  std::set<std::string> known_topics_;
  RebalanceListener listener_;
};

}  // namespace flowsched::bus
