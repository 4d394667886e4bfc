#pragma once

// Converts cluster entities to and from the records the graph manager keeps
// in RocksDB (flowsched.v1.JobRecord, TaskRecord, MachineRecord).

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "services/cluster/cluster_types.h"

namespace flowsched::graph_manager {

std::string EncodeJob(const cluster::Job& job);
std::string EncodeTask(const cluster::Task& task);
std::string EncodeMachine(const cluster::Machine& machine);

// DataLoss when the bytes do not parse or carry a zero id.
absl::StatusOr<cluster::Job> DecodeJob(std::string_view bytes);
absl::StatusOr<cluster::Task> DecodeTask(std::string_view bytes);
absl::StatusOr<cluster::Machine> DecodeMachine(std::string_view bytes);

}  // namespace flowsched::graph_manager
