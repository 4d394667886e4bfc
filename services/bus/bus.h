#pragma once

// Where a service gets its record sources and sinks: Bus is the seam
// between a service and the brokers. KafkaBus makes the Kafka Consumer and
// Producer; MemoryBus (memory_bus.h) keeps topics in memory for unit tests.
//
// Thread-safety: a Bus may be asked for sources and sinks from any thread;
// each implementation states what it guarantees beyond.

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "services/bus/kafka_options.h"
#include "services/bus/record_sink.h"
#include "services/bus/record_source.h"

namespace flowsched::bus {

class Bus {
 public:
  Bus() = default;
  Bus(const Bus&) = delete;
  Bus& operator=(const Bus&) = delete;
  virtual ~Bus() = default;

  // A new source with nothing assigned; `group_id` names its reader (Kafka's
  // group.id; no group is joined). Unavailable/InvalidArgument if it cannot
  // be made. The source must not outlive the bus.
  virtual absl::StatusOr<std::unique_ptr<RecordSource>> NewSource(
      const std::string& group_id) = 0;

  // A new sink. Unavailable/InvalidArgument if it cannot be made. The sink
  // must not outlive the bus.
  virtual absl::StatusOr<std::unique_ptr<RecordSink>> NewSink() = 0;
};

// The brokers `options` name: NewSource is Consumer::Create(options,
// group_id), NewSink Producer::Create(options).
class KafkaBus final : public Bus {
 public:
  explicit KafkaBus(KafkaOptions options) : options_(std::move(options)) {}

  absl::StatusOr<std::unique_ptr<RecordSource>> NewSource(
      const std::string& group_id) override;
  absl::StatusOr<std::unique_ptr<RecordSink>> NewSink() override;

 private:
  const KafkaOptions options_;
};

}  // namespace flowsched::bus
