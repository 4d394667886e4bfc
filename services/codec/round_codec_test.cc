#include "services/codec/round_codec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"

namespace flowsched::codec {
namespace {

using flow::GraphChange;
using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

TEST(RoundCodecTest, EveryChangeTypeRoundTripsThroughBytes) {
  const std::vector<GraphChange> changes = {
      {.type = GraphChange::Type::kAddNode,
       .node = 4,
       .data = {.kind = flow::NodeKind::kTask,
                .supply = 1,
                .entity_id = 77,
                .running_on = 3}},
      {.type = GraphChange::Type::kUpdateNode,
       .node = 4,
       .data = {.kind = flow::NodeKind::kTask, .supply = 1, .entity_id = 77}},
      {.type = GraphChange::Type::kRemoveNode, .node = 9},
      {.type = GraphChange::Type::kSetArc,
       .src = 4,
       .dst = 2,
       .capacity = 5,
       .cost = -12,
       .extra_segments = {{2, -3}, {7, 40}}},
      {.type = GraphChange::Type::kRemoveArc, .src = 4, .dst = 2},
  };
  for (const GraphChange& change : changes) {
    v1::GraphChange message;
    EncodeChange(change, message);
    v1::GraphChange parsed;
    ASSERT_TRUE(parsed.ParseFromString(message.SerializeAsString()));
    auto decoded = DecodeChange(parsed);
    ASSERT_THAT(decoded, IsOk());
    if (change.type == GraphChange::Type::kRemoveNode ||
        change.type == GraphChange::Type::kRemoveArc ||
        change.type == GraphChange::Type::kSetArc) {
      EXPECT_EQ(decoded->type, change.type);
      EXPECT_EQ(decoded->node, change.node);
      EXPECT_EQ(decoded->src, change.src);
      EXPECT_EQ(decoded->dst, change.dst);
      EXPECT_EQ(decoded->capacity, change.capacity);
      EXPECT_EQ(decoded->cost, change.cost);
      EXPECT_EQ(decoded->extra_segments, change.extra_segments);
    } else {
      EXPECT_EQ(*decoded, change);
    }
  }
}

TEST(RoundCodecTest, RejectsEmptyChangeBadKindAndHugeIds) {
  EXPECT_THAT(DecodeChange(v1::GraphChange()),
              StatusIs(absl::StatusCode::kInvalidArgument, "no change"));
  v1::GraphChange bad_kind;
  bad_kind.mutable_add_node()->set_id(1);
  bad_kind.mutable_add_node()->set_kind(static_cast<v1::NodeKind>(99));
  EXPECT_THAT(DecodeChange(bad_kind),
              StatusIs(absl::StatusCode::kInvalidArgument, "unknown kind"));
  v1::GraphChange huge;
  huge.mutable_remove_arc()->set_src(flow::kMaxNodeId);
  EXPECT_THAT(DecodeChange(huge),
              StatusIs(absl::StatusCode::kInvalidArgument, "limit"));
}

}  // namespace
}  // namespace flowsched::codec
