#pragma once

// Publishing ClusterEvents to the events topic, keyed by entity so the
// events of one job or machine stay in order.

#include <istream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flowsched/v1/events.pb.h"
#include "services/bus/producer.h"

namespace flowsched::tools {

// Produces every event (to `partition`, or by entity key when it is
// bus::kAnyPartition) and flushes. Unavailable if any delivery failed.
absl::Status SubmitEvents(bus::Producer& producer, const std::string& topic,
                          const std::vector<v1::ClusterEvent>& events,
                          int32_t partition = bus::kAnyPartition);

struct ParsedEvents {
  std::vector<v1::ClusterEvent> events;
  std::vector<std::string> errors;  // "line N: reason"
};

// Reads JSON lines (protobuf's JSON mapping of flowsched.v1.ClusterEvent).
// Blank lines and lines starting with '#' are skipped.
ParsedEvents ParseJsonLines(std::istream& in);

}  // namespace flowsched::tools
