#pragma once

// Asynchronous Kafka producer: Produce() enqueues, Flush() waits for the
// broker's acknowledgements and reports any delivery that failed.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/bus/kafka_options.h"
#include "services/bus/record_sink.h"

struct rd_kafka_message_s;

namespace flowsched::bus {

// kAnyPartition: the murmur2 partitioner picks by key (as the Java client).
// Thread-safe: Produce, Flush and PartitionCount may be called concurrently.
class Producer final : public RecordSink {
 public:
  // Defaults: acks=all, enable.idempotence=true (false for legacy brokers),
  // partitioner=murmur2_random (same key -> same partition as the Java
  // client), linger.ms=5, message.max.bytes=1000000,
  // message.timeout.ms=30000, reconnect.backoff.max.ms=2000.
  // InvalidArgument for an empty broker list or a rejected setting.
  static absl::StatusOr<std::unique_ptr<Producer>> Create(
      const KafkaOptions& options);

  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;
  ~Producer() override;

  // Enqueues a copy of key and value. If librdkafka's local queue is full,
  // serves delivery reports and retries for about a second, then returns
  // Unavailable. Internal after a fatal (idempotence) error.
  absl::Status Produce(std::string_view topic, int32_t partition,
                       std::string_view key, std::string_view value) override;

  // Waits up to timeout_ms for every outstanding delivery. Unavailable if
  // some are still outstanding, or if any delivery failed since the previous
  // Flush (with the count and the first error); the failure record is reset.
  absl::Status Flush(int timeout_ms) override;

  // Partition count from a metadata request for all topics (so that asking
  // does not auto-create the topic). NotFound if the topic does not exist.
  absl::StatusOr<int> PartitionCount(std::string_view topic,
                                     int timeout_ms) override;

  // Messages enqueued or in flight (librdkafka's outq_len).
  [[nodiscard]] int OutstandingCount() const;

 private:
  // Passkey so that only Create() constructs, yet make_unique still works.
  struct Token {
    explicit Token() = default;
  };

 public:
  explicit Producer(Token /*token*/) {}

 private:
  static void OnDelivery(rd_kafka_s* rk, const rd_kafka_message_s* message,
                         void* opaque);
  static void OnError(rd_kafka_s* rk, int err, const char* reason,
                      void* opaque);

  KafkaHandlePtr rk_;
  std::mutex mu_;
  uint64_t failed_deliveries_ = 0;  // guarded by mu_
  std::string first_failure_;       // guarded by mu_
};

}  // namespace flowsched::bus
