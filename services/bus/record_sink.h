#pragma once

// What a service writes to the bus: records produced asynchronously and
// confirmed by a flush. Implemented by the Kafka Producer (producer.h) and,
// for unit tests, by MemoryBus (memory_bus.h).

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace flowsched::bus {

// Partition argument that lets the sink pick the partition by key.
inline constexpr int32_t kAnyPartition = -1;

// Thread-safe: every method may be called concurrently.
class RecordSink {
 public:
  RecordSink() = default;
  RecordSink(const RecordSink&) = delete;
  RecordSink& operator=(const RecordSink&) = delete;
  virtual ~RecordSink() = default;

  // Enqueues a copy of the record for `partition` (or kAnyPartition).
  // Unavailable if it cannot be queued now (retry later); Internal if the
  // sink is broken for good.
  virtual absl::Status Produce(std::string_view topic, int32_t partition,
                               std::string_view key,
                               std::string_view value) = 0;

  // Waits up to timeout_ms until every record produced before is stored by
  // the broker. Unavailable if some are still outstanding or any delivery
  // failed since the previous Flush (failed records are not retried).
  virtual absl::Status Flush(int timeout_ms) = 0;

  // The topic's partition count; NotFound if it does not exist.
  virtual absl::StatusOr<int> PartitionCount(std::string_view topic,
                                             int timeout_ms) = 0;
};

}  // namespace flowsched::bus
