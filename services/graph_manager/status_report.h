#pragma once

// What the graph manager reports about itself: counts of the cluster, of
// events and rounds, and round timings. Written as JSON (the protobuf JSON
// mapping of flowsched.v1.GraphManagerStatus) to <data-dir>/status.json,
// atomically (temp file + rename), for `flowsched status`, the README's
// summary and the integration tests.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "flowsched/v1/status.pb.h"

namespace flowsched::graph_manager {

// Fills `out` with count, percentiles, max and mean of `values_ms`.
void SummarizeTimings(const std::vector<double>& values_ms, v1::Timings& out);

absl::Status WriteStatusFile(const std::string& path,
                             const v1::GraphManagerStatus& status);
// NotFound if the file does not exist, DataLoss if it does not parse.
absl::StatusOr<v1::GraphManagerStatus> ReadStatusFile(const std::string& path);

}  // namespace flowsched::graph_manager
