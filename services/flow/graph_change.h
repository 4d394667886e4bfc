#pragma once

// The flow network's vocabulary: node kinds, node data and one recorded
// change. Deltas between solver rounds are lists of GraphChange; the wire
// form (flowsched.v1.GraphChange) is converted at the service edge.

#include <cstdint>
#include <limits>
#include <vector>

namespace flowsched::flow {

using NodeId = uint32_t;
inline constexpr NodeId kNoNode = std::numeric_limits<NodeId>::max();
// Node ids are dense slot indices; this cap bounds memory when a round from
// outside names an absurd id.
inline constexpr NodeId kMaxNodeId = NodeId{1} << 26;

// Values match flowsched.v1.NodeKind.
enum class NodeKind : uint8_t {
  kUnused = 0,
  kTask = 1,
  kJobUnscheduled = 2,
  kClusterAggregator = 3,
  kRack = 4,
  kMachine = 5,
  kSink = 6,
  kEquivalenceClass = 7,
};
inline constexpr uint8_t kMaxNodeKind = 7;

struct NodeData {
  NodeKind kind = NodeKind::kUnused;
  int64_t supply = 0;
  uint64_t entity_id = 0;   // task or machine id, 0 for aggregators
  uint64_t running_on = 0;  // task nodes: machine id the task runs on, or 0
  bool operator==(const NodeData&) const = default;
};

// One further piece of a convex arc: `capacity` more units at `cost` each.
// An arc's first piece is its plain capacity and cost; further pieces cost
// at least as much as the one before, so the k-th unit of flow over the arc
// costs what the policy meant (e.g. load spreading's k-th task on a
// machine). Pieces export as parallel solver arcs.
struct ArcSegment {
  int64_t capacity = 0;
  int64_t cost = 0;
  bool operator==(const ArcSegment&) const = default;
};
inline constexpr size_t kMaxArcSegments = 64;

struct GraphChange {
  enum class Type : uint8_t {
    kAddNode,     // node, data
    kRemoveNode,  // node; removes its arcs too
    kUpdateNode,  // node, data.supply, data.running_on
    kSetArc,      // src, dst, capacity, cost (adds or changes)
    kRemoveArc,   // src, dst
  };
  Type type = Type::kAddNode;
  NodeId node = kNoNode;
  NodeData data;
  NodeId src = kNoNode;
  NodeId dst = kNoNode;
  int64_t capacity = 0;
  int64_t cost = 0;
  std::vector<ArcSegment> extra_segments;  // kSetArc: convex pieces
  bool operator==(const GraphChange&) const = default;
};

}  // namespace flowsched::flow
