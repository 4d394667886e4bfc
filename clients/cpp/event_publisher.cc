#include "clients/cpp/event_publisher.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"
#include "tools/workload/workload_generator.h"

namespace flowsched::client {

absl::StatusOr<std::unique_ptr<EventPublisher>> EventPublisher::Create(
    const bus::KafkaOptions& options, std::string topic_prefix) {
  FLOWSCHED_ASSIGN_OR_RETURN(std::unique_ptr<bus::Producer> producer,
                             bus::Producer::Create(options));
  return std::make_unique<EventPublisher>(std::move(producer),
                                          absl::StrCat(topic_prefix, "events"));
}

EventPublisher::EventPublisher(std::unique_ptr<bus::Producer> producer,
                               std::string topic)
    : producer_(std::move(producer)),
      topic_(std::move(topic)),
      decoder_(cluster::ValidationLimits{}) {}

absl::Status EventPublisher::Validate(const v1::ClusterEvent& event) const {
  absl::StatusOr<cluster::ClusterEvent> decoded = decoder_.FromProto(event);
  if (!decoded.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid ClusterEvent, not sent: ", decoded.status().message()));
  }
  return absl::OkStatus();
}

absl::Status EventPublisher::Publish(const v1::ClusterEvent& event) {
  FLOWSCHED_RETURN_IF_ERROR(Validate(event));
  const bool admin = event.event_case() == v1::ClusterEvent::kSetPolicy ||
                     event.event_case() == v1::ClusterEvent::kTick;
  return producer_->Produce(topic_, admin ? 0 : bus::kAnyPartition,
                            tools::EventKey(event), event.SerializeAsString());
}

absl::Status EventPublisher::Flush(int timeout_ms) {
  return producer_->Flush(timeout_ms);
}

}  // namespace flowsched::client
