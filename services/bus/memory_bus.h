#pragma once

// A bus in memory, for unit tests of services without a broker (the
// graph manager's graph_manager_test.cc): topics of partitions, each a
// vector of records whose index is the offset; nothing is ever deleted, so
// the low watermark is 0. Integration tests keep using real brokers.
//
// What it mimics: a sink's records become visible (get offsets) only when
// that sink flushes, or when it is destroyed (as the Kafka producer's
// destructor flushes); sources read the assigned partitions from their
// offsets, in offset order. What it does not: consumer groups, retention,
// timestamps (-1), Kafka's murmur2 partitioner (kAnyPartition picks by an
// FNV-1a hash of the key), topics created by producing to them.
//
// Faults, to test the callers' retries: set_refuse_produce() makes every
// Produce fail (a full queue, a broker down) and set_fail_delivery() makes
// every Flush fail and drop what was queued (deliveries timed out).
//
// Thread-safety: thread-safe, and so are its sinks; a source is used by one
// thread at a time, as a Kafka consumer. Sources and sinks must not outlive
// the bus.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/bus/bus.h"
#include "services/bus/record_sink.h"
#include "services/bus/record_source.h"
#include "services/bus/topics.h"

namespace flowsched::bus {

class MemoryBus final : public Bus {
 public:
  MemoryBus() = default;
  // With the topics of `specs` (DefaultTopicSpecs for flowsched's).
  explicit MemoryBus(const std::vector<TopicSpec>& specs);

  // InvalidArgument for fewer than one partition, AlreadyExists for a name
  // taken.
  absl::Status CreateTopic(const std::string& name, int partitions);

  absl::StatusOr<std::unique_ptr<RecordSource>> NewSource(
      const std::string& group_id) override;
  absl::StatusOr<std::unique_ptr<RecordSink>> NewSink() override;

  // Stores a record at once, as another producer's acknowledged delivery
  // (ignores the faults); returns its offset. NotFound for an unknown topic
  // or partition.
  absl::StatusOr<int64_t> Append(std::string_view topic, int32_t partition,
                                 std::string_view key, std::string_view value);

  // Copies of the records of one partition from offset `from` (or its low
  // watermark) on; empty for an unknown topic or partition.
  [[nodiscard]] std::vector<Record> Read(std::string_view topic,
                                         int32_t partition,
                                         int64_t from = 0) const;
  // The partition's high watermark (its record count); -1 if unknown.
  [[nodiscard]] int64_t EndOffset(std::string_view topic,
                                  int32_t partition) const;
  // Drops the records below `offset`, as a broker's retention does: the
  // low watermark becomes `offset`, and a reader positioned below it
  // continues at it (a Kafka consumer's auto.offset.reset=earliest).
  // NotFound for an unknown topic or partition.
  absl::Status DeleteBefore(std::string_view topic, int32_t partition,
                            int64_t offset);

  void set_refuse_produce(bool refuse);
  void set_fail_delivery(bool fail);
  // Records dropped by failed flushes so far.
  [[nodiscard]] uint64_t failed_deliveries() const;

 private:
  class Source;
  class Sink;
  using Partitions = std::vector<std::vector<Record>>;

  // REQUIRES: mu_ held. Null for an unknown topic or partition.
  std::vector<Record>* FindLocked(std::string_view topic, int32_t partition);
  // REQUIRES: mu_ held. The partition's low watermark.
  [[nodiscard]] int64_t LowLocked(std::string_view topic,
                                  int32_t partition) const;
  // REQUIRES: mu_ held. Stores `record` under its topic and partition
  // (known), setting its offset.
  void StoreLocked(Record record);

  mutable std::mutex mu_;
  // Signalled whenever records are stored.
  std::condition_variable stored_;
  std::map<std::string, Partitions, std::less<>> topics_;  // guarded by mu_
  // Low watermarks above 0 (DeleteBefore); guarded by mu_.
  std::map<std::pair<std::string, int32_t>, int64_t> low_;
  bool refuse_produce_ = false;     // guarded by mu_
  bool fail_delivery_ = false;      // guarded by mu_
  uint64_t failed_deliveries_ = 0;  // guarded by mu_
};

}  // namespace flowsched::bus
