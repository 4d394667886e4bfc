#pragma once

// Converts flow-network changes between the domain form (flow::GraphChange)
// and the wire form (flowsched.v1.GraphChange). Both services use it: the
// graph manager to publish rounds and store the network, the solver worker
// to read them. Decoding validates what the domain type cannot express.

#include <vector>

#include "absl/status/statusor.h"
#include "flowsched/v1/rounds.pb.h"
#include "services/flow/graph_change.h"

namespace flowsched::codec {

void EncodeChange(const flow::GraphChange& change, v1::GraphChange& out);
// InvalidArgument for an empty change, an unknown node kind or an id at or
// above flow::kMaxNodeId.
absl::StatusOr<flow::GraphChange> DecodeChange(const v1::GraphChange& message);

void EncodeNode(flow::NodeId id, const flow::NodeData& data, v1::Node& out);
absl::StatusOr<flow::GraphChange> DecodeNodeAsAdd(const v1::Node& message);

}  // namespace flowsched::codec
