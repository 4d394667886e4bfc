#pragma once

// What a service reads from the bus: records of assigned partitions, from
// offsets the service keeps itself, and the partitions' watermarks.
// Implemented by the Kafka Consumer (consumer.h) and, for unit tests, by
// MemoryBus (memory_bus.h).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace flowsched::bus {

// Same values as librdkafka's RD_KAFKA_OFFSET_BEGINNING / _END.
inline constexpr int64_t kOffsetBeginning = -2;
inline constexpr int64_t kOffsetEnd = -1;

struct Record {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  std::string key;
  std::string value;
  // Producer or broker timestamp; -1 when the broker has none (Kafka 0.9).
  int64_t timestamp_ms = -1;
};

struct TopicPartitionOffset {
  std::string topic;
  int32_t partition = 0;
  // An absolute offset, kOffsetBeginning or kOffsetEnd.
  int64_t offset = kOffsetBeginning;
};

// Not thread-safe: one thread uses a source.
class RecordSource {
 public:
  RecordSource() = default;
  RecordSource(const RecordSource&) = delete;
  RecordSource& operator=(const RecordSource&) = delete;
  virtual ~RecordSource() = default;

  // Replaces the whole assignment (an empty list unassigns everything);
  // each partition is read from its offset on, in offset order.
  virtual absl::Status Assign(
      const std::vector<TopicPartitionOffset>& partitions) = 0;

  // Up to max_records of the assigned partitions, waiting up to timeout_ms
  // for the first; empty if none came in time. Internal or Unavailable
  // when the source cannot go on (records collected before come first).
  virtual absl::StatusOr<std::vector<Record>> Poll(size_t max_records,
                                                   int timeout_ms) = 0;

  // Poll for service loops that ride out broker trouble: an error is
  // logged, answered with an empty result and a growing pause.
  virtual std::vector<Record> PollOrBackOff(size_t max_records,
                                            int timeout_ms) = 0;

  // (low, high) watermark offsets of a partition: high is the offset the
  // next record produced there gets. Asks the broker (up to timeout_ms).
  virtual absl::StatusOr<std::pair<int64_t, int64_t>> Watermarks(
      std::string_view topic, int32_t partition, int timeout_ms) = 0;

  // The watermarks as last seen while reading, without asking the broker
  // (cheap enough for status updates); NotFound until the partition was
  // read from.
  [[nodiscard]] virtual absl::StatusOr<std::pair<int64_t, int64_t>>
  CachedWatermarks(std::string_view topic, int32_t partition) const = 0;
};

}  // namespace flowsched::bus
