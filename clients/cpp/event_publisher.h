#pragma once

// EventPublisher: flowsched.v1.ClusterEvents to the events topic, keyed and
// partitioned like the CLI (tools::EventKey, murmur2 by key; SetPolicy and
// Tick to partition 0, which a deterministic graph manager reads alone).
// Each event is first checked with the graph manager's own decoder
// (cluster::EventDecoder, default limits); an invalid event is refused with
// InvalidArgument naming the field and is not sent. What needs cluster
// state (unknown ids, duplicates across events) is left to the graph
// manager, which dead-letters it. Not thread-safe.

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "flowsched/v1/events.pb.h"
#include "services/bus/kafka_options.h"
#include "services/bus/producer.h"
#include "services/cluster/event_decoder.h"

namespace flowsched::client {

class EventPublisher {
 public:
  // `topic_prefix` + "events" is the topic. InvalidArgument for an empty
  // broker list or a rejected Kafka setting.
  static absl::StatusOr<std::unique_ptr<EventPublisher>> Create(
      const bus::KafkaOptions& options,
      std::string topic_prefix = "flowsched.");

  // The decoder's verdict on `event`, without sending it.
  [[nodiscard]] absl::Status Validate(const v1::ClusterEvent& event) const;

  // Validates, then enqueues. InvalidArgument (nothing sent) for an event
  // the graph manager would reject; Unavailable if the local queue is full.
  absl::Status Publish(const v1::ClusterEvent& event);

  // Waits up to timeout_ms until every published event was acknowledged;
  // Unavailable if some are outstanding or a delivery failed.
  absl::Status Flush(int timeout_ms);

  [[nodiscard]] const std::string& topic() const { return topic_; }

  EventPublisher(std::unique_ptr<bus::Producer> producer, std::string topic);

 private:
  std::unique_ptr<bus::Producer> producer_;
  std::string topic_;
  cluster::EventDecoder decoder_;
};

}  // namespace flowsched::client
