#include "services/codec/round_codec.h"

#include "absl/strings/str_cat.h"

namespace flowsched::codec {
namespace {

using flow::GraphChange;

absl::Status CheckId(uint32_t id) {
  if (id >= flow::kMaxNodeId) {
    return absl::InvalidArgumentError(
        absl::StrCat("node id ", id, " exceeds the limit ", flow::kMaxNodeId));
  }
  return absl::OkStatus();
}

absl::StatusOr<flow::NodeData> DecodeNodeData(const v1::Node& node) {
  if (auto status = CheckId(node.id()); !status.ok()) return status;
  const int kind = static_cast<int>(node.kind());
  if (kind <= 0 || kind > flow::kMaxNodeKind) {
    return absl::InvalidArgumentError(
        absl::StrCat("node ", node.id(), " has unknown kind ", kind));
  }
  return flow::NodeData{.kind = static_cast<flow::NodeKind>(kind),
                        .supply = node.supply(),
                        .entity_id = node.entity_id(),
                        .running_on = node.running_on()};
}

}  // namespace

void EncodeNode(flow::NodeId id, const flow::NodeData& data, v1::Node& out) {
  out.set_id(id);
  out.set_kind(static_cast<v1::NodeKind>(data.kind));
  out.set_supply(data.supply);
  out.set_entity_id(data.entity_id);
  out.set_running_on(data.running_on);
}

void EncodeChange(const GraphChange& change, v1::GraphChange& out) {
  switch (change.type) {
    case GraphChange::Type::kAddNode:
      EncodeNode(change.node, change.data, *out.mutable_add_node());
      break;
    case GraphChange::Type::kUpdateNode:
      EncodeNode(change.node, change.data, *out.mutable_update_node());
      break;
    case GraphChange::Type::kRemoveNode:
      out.mutable_remove_node()->set_id(change.node);
      break;
    case GraphChange::Type::kSetArc: {
      v1::Arc* arc = out.mutable_add_arc();
      arc->set_src(change.src);
      arc->set_dst(change.dst);
      arc->set_capacity(change.capacity);
      arc->set_cost(change.cost);
      for (const flow::ArcSegment& piece : change.extra_segments) {
        v1::ArcSegment* out_piece = arc->add_extra_segments();
        out_piece->set_capacity(piece.capacity);
        out_piece->set_cost(piece.cost);
      }
      break;
    }
    case GraphChange::Type::kRemoveArc:
      out.mutable_remove_arc()->set_src(change.src);
      out.mutable_remove_arc()->set_dst(change.dst);
      break;
  }
}

absl::StatusOr<GraphChange> DecodeNodeAsAdd(const v1::Node& message) {
  auto data = DecodeNodeData(message);
  if (!data.ok()) return data.status();
  return GraphChange{
      .type = GraphChange::Type::kAddNode, .node = message.id(), .data = *data};
}

absl::StatusOr<GraphChange> DecodeChange(const v1::GraphChange& message) {
  switch (message.change_case()) {
    case v1::GraphChange::kAddNode:
      return DecodeNodeAsAdd(message.add_node());
    case v1::GraphChange::kUpdateNode: {
      auto data = DecodeNodeData(message.update_node());
      if (!data.ok()) return data.status();
      return GraphChange{.type = GraphChange::Type::kUpdateNode,
                         .node = message.update_node().id(),
                         .data = *data};
    }
    case v1::GraphChange::kRemoveNode:
      if (auto s = CheckId(message.remove_node().id()); !s.ok()) return s;
      return GraphChange{.type = GraphChange::Type::kRemoveNode,
                         .node = message.remove_node().id()};
    case v1::GraphChange::kAddArc: {
      const v1::Arc& arc = message.add_arc();
      if (auto s = CheckId(arc.src()); !s.ok()) return s;
      if (auto s = CheckId(arc.dst()); !s.ok()) return s;
      if (static_cast<size_t>(arc.extra_segments_size()) >
          flow::kMaxArcSegments) {
        return absl::InvalidArgumentError(
            absl::StrCat("arc ", arc.src(), "->", arc.dst(), " has ",
                         arc.extra_segments_size(), " pieces"));
      }
      GraphChange change{.type = GraphChange::Type::kSetArc,
                         .src = arc.src(),
                         .dst = arc.dst(),
                         .capacity = arc.capacity(),
                         .cost = arc.cost()};
      for (const v1::ArcSegment& piece : arc.extra_segments()) {
        change.extra_segments.push_back({piece.capacity(), piece.cost()});
      }
      return change;
    }
    case v1::GraphChange::kRemoveArc: {
      const v1::ArcRef& arc = message.remove_arc();
      if (auto s = CheckId(arc.src()); !s.ok()) return s;
      if (auto s = CheckId(arc.dst()); !s.ok()) return s;
      return GraphChange{.type = GraphChange::Type::kRemoveArc,
                         .src = arc.src(),
                         .dst = arc.dst()};
    }
    case v1::GraphChange::CHANGE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("graph change carries no change");
}

}  // namespace flowsched::codec
