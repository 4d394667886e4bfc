#include "services/flow/flow_network.h"

#include <algorithm>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"

namespace flowsched::flow {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

NodeData Task(uint64_t id) {
  return {.kind = NodeKind::kTask, .supply = 1, .entity_id = id};
}

TEST(FlowNetworkTest, ReusesTheLowestFreeNodeId) {
  FlowNetwork net;
  NodeId a = net.AddNode(Task(1));
  NodeId b = net.AddNode(Task(2));
  NodeId c = net.AddNode(Task(3));
  ASSERT_THAT(net.RemoveNode(c), IsOk());
  ASSERT_THAT(net.RemoveNode(a), IsOk());
  EXPECT_EQ(net.AddNode(Task(4)), a);
  EXPECT_EQ(net.AddNode(Task(5)), c);
  EXPECT_EQ(net.node(b).entity_id, 2u);
  EXPECT_EQ(net.node_count(), 3u);
  EXPECT_EQ(net.total_supply(), 3);
}

// The compact copies extraction reads must follow every add, removal and
// reuse of a slot, including a node id reused through AddNodeWithId.
TEST(FlowNetworkTest, ArcEndsAndKindsFollowSlotReuse) {
  FlowNetwork net;
  const NodeId t = net.AddNode(Task(1));
  const NodeId x = net.AddNode({.kind = NodeKind::kClusterAggregator});
  const NodeId s = net.AddNode({.kind = NodeKind::kSink, .supply = -1});
  EXPECT_EQ(net.kind(t), NodeKind::kTask);
  EXPECT_EQ(net.kind(x), NodeKind::kClusterAggregator);
  EXPECT_EQ(net.kind(s + 7), NodeKind::kUnused);  // beyond every slot
  ASSERT_THAT(net.SetArc(t, x, 1, 0), IsOk());
  ASSERT_THAT(net.SetArc(x, s, 1, 0), IsOk());
  const ArcSlot tx = net.FindArc(t, x)->slot;
  NodeId src = kNoNode, dst = kNoNode;
  ASSERT_TRUE(net.ArcEnds(tx, src, dst));
  EXPECT_EQ(src, t);
  EXPECT_EQ(dst, x);
  ASSERT_THAT(net.RemoveNode(t), IsOk());
  EXPECT_EQ(net.kind(t), NodeKind::kUnused);
  EXPECT_FALSE(net.ArcEnds(tx, src, dst));
  // Slot and id come back, with other ends and another kind.
  ASSERT_THAT(net.AddNodeWithId(t, {.kind = NodeKind::kMachine}), IsOk());
  EXPECT_EQ(net.kind(t), NodeKind::kMachine);
  ASSERT_THAT(net.SetArc(x, t, 1, 0), IsOk());
  EXPECT_EQ(net.FindArc(x, t)->slot, tx);
  ASSERT_TRUE(net.ArcEnds(tx, src, dst));
  EXPECT_EQ(src, x);
  EXPECT_EQ(dst, t);
  EXPECT_FALSE(net.ArcEnds(tx + 100, src, dst));
}

TEST(FlowNetworkTest, RemovingANodeRemovesItsArcs) {
  FlowNetwork net;
  NodeId a = net.AddNode(Task(1));
  NodeId x = net.AddNode({.kind = NodeKind::kClusterAggregator});
  NodeId s = net.AddNode({.kind = NodeKind::kSink, .supply = -1});
  ASSERT_THAT(net.SetArc(a, x, 1, 0), IsOk());
  ASSERT_THAT(net.SetArc(x, s, 5, 3), IsOk());
  ASSERT_THAT(net.RemoveNode(x), IsOk());
  EXPECT_EQ(net.arc_count(), 0u);
  EXPECT_FALSE(net.FindArc(a, x).has_value());
  int out = 0;
  net.ForEachOutArc(a, [&](const ArcView&) { ++out; });
  EXPECT_EQ(out, 0);
}

TEST(FlowNetworkTest, RecordsOnlyRealChanges) {
  FlowNetwork net;
  net.set_record_changes(true);
  NodeId a = net.AddNode(Task(1));
  NodeId s = net.AddNode({.kind = NodeKind::kSink, .supply = -1});
  ASSERT_THAT(net.SetArc(a, s, 1, 7), IsOk());
  EXPECT_EQ(net.TakeChanges().size(), 3u);
  ASSERT_THAT(net.SetArc(a, s, 1, 7), IsOk());
  ASSERT_THAT(net.UpdateNode(a, 1, 0), IsOk());
  EXPECT_FALSE(net.has_changes());
  ASSERT_THAT(net.SetArc(a, s, 1, 8), IsOk());
  auto changes = net.TakeChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].cost, 8);
}

// SetOutArcs against what it stands for: RemoveArc of every other out-arc
// in out-list order, then SetArc of each desired arc. Random out-sets over
// a few destinations (repeats, convex pieces, unchanged arcs) must leave
// the same network and record the same changes.
TEST(FlowNetworkTest, SetOutArcsEqualsRemovalsThenSets) {
  FlowNetwork fast;
  FlowNetwork reference;
  fast.set_record_changes(true);
  reference.set_record_changes(true);
  std::vector<NodeId> nodes;
  for (uint64_t id = 1; id <= 8; ++id) {
    nodes.push_back(fast.AddNode(Task(id)));
    ASSERT_EQ(reference.AddNode(Task(id)), nodes.back());
  }
  std::mt19937 rng(7);
  auto pick = [&](size_t n) {
    return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  };
  for (int step = 0; step < 2000; ++step) {
    const NodeId src = nodes[pick(3)];
    std::vector<DesiredArc> desired;
    // Now and then more than SetOutArcs keeps inline (16), repeats included.
    const size_t count = pick(8) == 0 ? 17 + pick(4) : pick(6);
    for (size_t i = 0; i < count; ++i) {
      NodeId dst = nodes[3 + pick(5)];
      DesiredArc arc{.dst = dst,
                     .capacity = static_cast<int64_t>(pick(3)),
                     .cost = static_cast<int64_t>(pick(4))};
      if (pick(4) == 0) arc.extra_segments.push_back({1, arc.cost + 1});
      desired.push_back(arc);
    }
    ASSERT_THAT(fast.SetOutArcs(src, desired), IsOk());
    std::vector<NodeId> stale;
    reference.ForEachOutArc(src, [&](const ArcView& arc) {
      if (std::none_of(desired.begin(), desired.end(),
                       [&](const DesiredArc& d) { return d.dst == arc.dst; })) {
        stale.push_back(arc.dst);
      }
    });
    for (NodeId dst : stale) ASSERT_THAT(reference.RemoveArc(src, dst), IsOk());
    for (const DesiredArc& arc : desired) {
      ASSERT_THAT(reference.SetArc(src, arc.dst, arc.capacity, arc.cost,
                                   arc.extra_segments),
                  IsOk());
    }
    ASSERT_EQ(fast.TakeChanges(), reference.TakeChanges()) << "step " << step;
  }
  EXPECT_EQ(fast.SnapshotChanges(), reference.SnapshotChanges());
  EXPECT_GT(fast.arc_count(), 0u);
}

// Every desired arc is checked before anything changes.
TEST(FlowNetworkTest, SetOutArcsWithABadArcChangesNothing) {
  FlowNetwork net;
  net.set_record_changes(true);
  const NodeId t = net.AddNode(Task(1));
  const NodeId a = net.AddNode(Task(2));
  const NodeId b = net.AddNode(Task(3));
  ASSERT_THAT(
      net.SetOutArcs(t, std::vector<DesiredArc>{{.dst = a, .capacity = 1}}),
      IsOk());
  const std::vector<GraphChange> before = net.SnapshotChanges();
  net.TakeChanges();
  EXPECT_THAT(
      net.SetOutArcs(t, std::vector<DesiredArc>{{.dst = b, .capacity = 1},
                                                {.dst = 99, .capacity = 1}}),
      StatusIs(absl::StatusCode::kFailedPrecondition, "unknown node"));
  EXPECT_THAT(
      net.SetOutArcs(t, std::vector<DesiredArc>{{.dst = b, .capacity = -1}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "out of range"));
  EXPECT_THAT(net.SetOutArcs(99, std::vector<DesiredArc>{}),
              StatusIs(absl::StatusCode::kFailedPrecondition, "unknown node"));
  EXPECT_FALSE(net.has_changes());
  EXPECT_EQ(net.SnapshotChanges(), before);
}

TEST(FlowNetworkTest, RejectsBadEdits) {
  FlowNetwork net;
  NodeId a = net.AddNode(Task(1));
  EXPECT_THAT(net.SetArc(a, a, 1, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, "self-loop"));
  EXPECT_THAT(net.SetArc(a, 9, 1, 0),
              StatusIs(absl::StatusCode::kFailedPrecondition, "unknown node"));
  NodeId b = net.AddNode(Task(2));
  EXPECT_THAT(net.SetArc(a, b, -1, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, "out of range"));
  EXPECT_THAT(net.SetArc(a, b, 1, solver::kMaxArcCost + 1),
              StatusIs(absl::StatusCode::kInvalidArgument, "out of range"));
  EXPECT_THAT(net.RemoveArc(a, b),
              StatusIs(absl::StatusCode::kFailedPrecondition, "unknown arc"));
  EXPECT_THAT(net.AddNodeWithId(a, Task(3)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "exists"));
  EXPECT_THAT(net.AddNodeWithId(kMaxNodeId, Task(3)),
              StatusIs(absl::StatusCode::kInvalidArgument, "limit"));
  EXPECT_THAT(net.AddNodeWithId(5, NodeData{}),
              StatusIs(absl::StatusCode::kInvalidArgument, "kind"));
}

TEST(FlowNetworkTest, ReplicaFollowsDeltasAndSnapshots) {
  FlowNetwork primary;
  primary.set_record_changes(true);
  FlowNetwork replica;
  NodeId s = primary.AddNode({.kind = NodeKind::kSink, .supply = -3});
  std::vector<NodeId> tasks;
  for (uint64_t i = 1; i <= 3; ++i) {
    tasks.push_back(primary.AddNode(Task(i)));
    ASSERT_THAT(primary.SetArc(tasks.back(), s, 1, static_cast<int64_t>(i)),
                IsOk());
  }
  for (const GraphChange& c : primary.TakeChanges()) {
    ASSERT_THAT(replica.Apply(c), IsOk());
  }
  ASSERT_THAT(primary.RemoveNode(tasks[1]), IsOk());
  ASSERT_THAT(primary.UpdateNode(s, -2, 0), IsOk());
  NodeId again = primary.AddNode(Task(9));
  EXPECT_EQ(again, tasks[1]);
  ASSERT_THAT(primary.SetArc(again, s, 1, 42), IsOk());
  for (const GraphChange& c : primary.TakeChanges()) {
    ASSERT_THAT(replica.Apply(c), IsOk());
  }
  EXPECT_EQ(replica.SnapshotChanges(), primary.SnapshotChanges());

  FlowNetwork from_snapshot;
  for (const GraphChange& c : primary.SnapshotChanges()) {
    ASSERT_THAT(from_snapshot.Apply(c), IsOk());
  }
  EXPECT_EQ(from_snapshot.SnapshotChanges(), primary.SnapshotChanges());
  EXPECT_EQ(from_snapshot.total_supply(), 1);
}

TEST(FlowNetworkTest, ConvexArcsExportAsParallelPiecesAndRejectConcavity) {
  FlowNetwork net;
  net.set_record_changes(true);
  NodeId a = net.AddNode(Task(1));
  NodeId s = net.AddNode({.kind = NodeKind::kSink, .supply = -1});
  const std::vector<ArcSegment> pieces = {{1, 5}, {3, 9}};
  ASSERT_THAT(net.SetArc(a, s, 1, 2, pieces), IsOk());
  solver::McmfProblem problem;
  std::vector<ArcSlot> slots;
  net.ExportProblem(problem, slots);
  ASSERT_EQ(problem.arcs.size(), 3u);
  EXPECT_EQ(problem.arcs[2].capacity, 3);
  EXPECT_EQ(problem.arcs[2].cost, 9);
  EXPECT_EQ(slots[0], slots[2]);
  net.TakeChanges();
  ASSERT_THAT(net.SetArc(a, s, 1, 2, pieces), IsOk());
  EXPECT_FALSE(net.has_changes());  // same pieces: no change
  const std::vector<ArcSegment> concave = {{1, 1}};
  EXPECT_THAT(net.SetArc(a, s, 1, 2, concave),
              StatusIs(absl::StatusCode::kInvalidArgument, "cheaper"));
  const std::vector<ArcSegment> too_many(kMaxArcSegments + 1, {1, 3});
  EXPECT_THAT(net.SetArc(a, s, 1, 2, too_many),
              StatusIs(absl::StatusCode::kInvalidArgument, "limit"));
}

// SetArcInSlot returns FindArc's slot and the pieces the arc had; further
// pieces kept aside follow every change, removal and reuse of a slot.
TEST(FlowNetworkTest, SetArcInSlotReportsTheSlotAndTheOldPieces) {
  FlowNetwork net;
  const NodeId a = net.AddNode(Task(1));
  const NodeId b = net.AddNode(Task(2));
  const NodeId s = net.AddNode({.kind = NodeKind::kSink, .supply = -2});
  absl::InlinedVector<ArcSegment, 2> before = {{7, 7}};
  const std::vector<ArcSegment> pieces = {{1, 5}, {3, 9}};
  auto slot = net.SetArcInSlot(a, s, 1, 2, pieces, before);
  ASSERT_THAT(slot, IsOk());
  EXPECT_EQ(*slot, net.FindArc(a, s)->slot);
  EXPECT_TRUE(before.empty());  // new
  auto again = net.SetArcInSlot(a, s, 4, 3, {}, before);
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(*again, *slot);
  EXPECT_THAT(before, ::testing::ElementsAre(ArcSegment{1, 2}, ArcSegment{1, 5},
                                             ArcSegment{3, 9}));
  EXPECT_TRUE(net.FindArc(a, s)->extra_segments.empty());
  EXPECT_EQ(net.FindArc(a, s)->cost, 3);
  ASSERT_THAT(net.SetArc(b, s, 1, -4, pieces), IsOk());
  ASSERT_THAT(net.RemoveArc(b, s), IsOk());
  // b->s's slot and its entry aside are reused by arcs of one piece.
  ASSERT_THAT(net.SetArc(b, a, 2, 1), IsOk());
  EXPECT_TRUE(net.FindArc(b, a)->extra_segments.empty());
  ASSERT_THAT(net.SetArc(a, b, 1, -1, pieces), IsOk());
  EXPECT_THAT(net.FindArc(a, b)->extra_segments,
              ::testing::ElementsAre(ArcSegment{1, 5}, ArcSegment{3, 9}));
  EXPECT_THAT(net.SetArcInSlot(a, a, 1, 0, {}, before),
              StatusIs(absl::StatusCode::kInvalidArgument, "self-loop"));
  EXPECT_TRUE(before.empty());
}

TEST(FlowNetworkTest, ExportSkipsDeadSlots) {
  FlowNetwork net;
  NodeId a = net.AddNode(Task(1));
  NodeId b = net.AddNode(Task(2));
  NodeId s = net.AddNode({.kind = NodeKind::kSink, .supply = -2});
  ASSERT_THAT(net.SetArc(a, s, 1, 1), IsOk());
  ASSERT_THAT(net.SetArc(b, s, 1, 2), IsOk());
  ASSERT_THAT(net.RemoveNode(a), IsOk());
  ASSERT_THAT(net.UpdateNode(s, -1, 0), IsOk());
  solver::McmfProblem problem;
  std::vector<ArcSlot> slots;
  net.ExportProblem(problem, slots);
  EXPECT_EQ(problem.node_count, 3u);
  EXPECT_EQ(problem.supply[a], 0);
  ASSERT_EQ(problem.arcs.size(), 1u);
  EXPECT_EQ(problem.arcs[0].src, b);
  EXPECT_EQ(problem.arcs[0].cost, 2);
  EXPECT_EQ(slots.size(), 1u);
}

}  // namespace
}  // namespace flowsched::flow
