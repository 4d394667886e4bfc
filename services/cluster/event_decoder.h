#pragma once

// Turns ClusterEvent records from the events topic into validated domain
// events. This is the trust boundary for everything cluster managers send:
// every field is checked here, so ClusterState only has to check the event
// against the current state.

#include <functional>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/cluster/cluster_event.h"
#include "services/cluster/validation_limits.h"

namespace flowsched::v1 {
class ClusterEvent;
}

namespace flowsched::cluster {

class EventDecoder {
 public:
  // Tells whether a SetPolicy event names a known policy. The registry lives
  // in services/flow, which depends on this library, so whoever owns both
  // (the graph manager, the CLI) injects it (flow::MakePolicy's status).
  using PolicyValidator = std::function<absl::Status(std::string_view)>;

  explicit EventDecoder(ValidationLimits limits,
                        PolicyValidator policy_validator = nullptr)
      : limits_(limits), policy_validator_(std::move(policy_validator)) {}

  // Parses and validates serialized flowsched.v1.ClusterEvent bytes.
  // Returns InvalidArgument for undecodable bytes, a missing event, zero ids,
  // negative or absurd resources, too many, unnamed or reserved named
  // scalars, impossible accelerator asks (negative, no device, a fraction
  // outside 1..999 milli or of more than one device, a present but empty
  // model list, more devices than a machine may have), bad device groups
  // (count, milli per device outside 1..1000, too many devices), too many
  // tasks, duplicate task ids within the event, oversize strings or too many
  // labels, or a SetPolicy naming an empty or (with a validator) unknown
  // policy; the message names the field. An ask no machine can serve today
  // is valid: it waits.
  [[nodiscard]] absl::StatusOr<ClusterEvent> Decode(
      std::string_view bytes) const;

  // Same checks on an already parsed message.
  [[nodiscard]] absl::StatusOr<ClusterEvent> FromProto(
      const v1::ClusterEvent& message) const;

  [[nodiscard]] const ValidationLimits& limits() const { return limits_; }

 private:
  ValidationLimits limits_;
  PolicyValidator policy_validator_;
};

}  // namespace flowsched::cluster
