#pragma once

// Turns ClusterEvent records from the events topic into validated domain
// events. This is the trust boundary for everything cluster managers send:
// every field is checked here, so ClusterState only has to check the event
// against the current state.

#include <string_view>

#include "absl/status/statusor.h"
#include "services/cluster/cluster_event.h"
#include "services/cluster/validation_limits.h"

namespace flowsched::v1 {
class ClusterEvent;
}

namespace flowsched::cluster {

class EventDecoder {
 public:
  explicit EventDecoder(ValidationLimits limits) : limits_(limits) {}

  // Parses and validates serialized flowsched.v1.ClusterEvent bytes.
  // Returns InvalidArgument for undecodable bytes, a missing event, zero ids,
  // negative or absurd resources, too many tasks, duplicate task ids within
  // the event, or oversize strings; the message names the field.
  [[nodiscard]] absl::StatusOr<ClusterEvent> Decode(
      std::string_view bytes) const;

  // Same checks on an already parsed message.
  [[nodiscard]] absl::StatusOr<ClusterEvent> FromProto(
      const v1::ClusterEvent& message) const;

  [[nodiscard]] const ValidationLimits& limits() const { return limits_; }

 private:
  ValidationLimits limits_;
};

}  // namespace flowsched::cluster
