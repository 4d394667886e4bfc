#include "services/flow/placement_extractor.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"

namespace flowsched::flow {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

// Firmament figure 5 style: three tasks, X, two machines, one unscheduled
// aggregator. Flow: t1 -> X -> m1, t2 -> m2 directly, t3 -> U.
class PlacementExtractorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sink_ = net_.AddNode({.kind = NodeKind::kSink, .supply = -3});
    x_ = net_.AddNode({.kind = NodeKind::kClusterAggregator});
    m1_ = net_.AddNode({.kind = NodeKind::kMachine, .entity_id = 101});
    m2_ = net_.AddNode({.kind = NodeKind::kMachine, .entity_id = 102});
    u_ = net_.AddNode({.kind = NodeKind::kJobUnscheduled, .entity_id = 1});
    for (uint64_t i = 1; i <= 3; ++i) {
      t_.push_back(net_.AddNode({.kind = NodeKind::kTask,
                                 .supply = 1,
                                 .entity_id = i,
                                 .running_on = i == 2 ? 102u : 0u}));
    }
    Arc(t_[0], x_, 1);
    Arc(t_[0], u_, 0);
    Arc(t_[1], m2_, 1);
    Arc(t_[1], u_, 0);
    Arc(t_[2], x_, 0);
    Arc(t_[2], u_, 1);
    Arc(x_, m1_, 1);
    Arc(x_, m2_, 0);
    Arc(m1_, sink_, 1);
    Arc(m2_, sink_, 1);
    Arc(u_, sink_, 1);
  }
  void Arc(NodeId src, NodeId dst, int64_t flow) {
    ASSERT_THAT(net_.SetArc(src, dst, 5, 0), IsOk());
    auto slot = net_.FindArc(src, dst)->slot;
    if (flow_.size() <= slot) flow_.resize(slot + 1, 0);
    flow_[slot] = flow;
  }
  // Tasks 4 and 5 through X onto m2 (which then takes three units).
  void AddTwoTasksThroughXOntoM2() {
    for (uint64_t i = 4; i <= 5; ++i) {
      Arc(net_.AddNode({.kind = NodeKind::kTask, .supply = 1, .entity_id = i}),
          x_, 1);
    }
    flow_[net_.FindArc(x_, m2_)->slot] = 2;
    flow_[net_.FindArc(m2_, sink_)->slot] = 3;
  }
  FlowNetwork net_;
  NodeId sink_, x_, m1_, m2_, u_;
  std::vector<NodeId> t_;
  std::vector<int64_t> flow_;
};

TEST_F(PlacementExtractorTest, TracesFlowThroughAggregatorsToTasks) {
  auto placements = ExtractPlacements(net_, flow_);
  ASSERT_THAT(placements, IsOk());
  ASSERT_EQ(placements->size(), 3u);
  EXPECT_EQ((*placements)[0].task_id, 1u);
  EXPECT_EQ((*placements)[0].machine_id, 101u);
  EXPECT_EQ((*placements)[1].machine_id, 102u);
  EXPECT_EQ((*placements)[1].running_on, 102u);
  EXPECT_EQ((*placements)[2].machine_id, 0u);
}

TEST_F(PlacementExtractorTest, ManyTasksThroughOneAggregatorGetDistinctSlots) {
  AddTwoTasksThroughXOntoM2();
  auto placements = ExtractPlacements(net_, flow_);
  ASSERT_THAT(placements, IsOk());
  int on_m1 = 0, on_m2 = 0;
  for (const auto& p : *placements) {
    on_m1 += p.machine_id == 101;
    on_m2 += p.machine_id == 102;
  }
  EXPECT_EQ(on_m1, 1);
  EXPECT_EQ(on_m2, 3);
}

TEST_F(PlacementExtractorTest, RejectsShortFlowVector) {
  EXPECT_THAT(ExtractPlacements(net_, {}),
              StatusIs(absl::StatusCode::kInternal, "arc slots"));
}

TEST_F(PlacementExtractorTest, RejectsTaskWithTwoUnits) {
  flow_[net_.FindArc(t_[0], x_)->slot] = 2;
  flow_[net_.FindArc(x_, m2_)->slot] = 1;
  EXPECT_THAT(ExtractPlacements(net_, flow_),
              StatusIs(absl::StatusCode::kInternal, "machine units"));
}

// The bit set of slots with flow reads the same slots in the same order:
// the placements equal the full scan's, and a set bit of an empty slot
// changes nothing.
TEST_F(PlacementExtractorTest, SlotsWithFlowGiveTheSamePlacements) {
  // Seventy unscheduled tasks first, so that the tasks through X below sit
  // in later words of the bit set.
  for (uint64_t i = 100; i < 170; ++i) {
    Arc(net_.AddNode({.kind = NodeKind::kTask, .supply = 1, .entity_id = i}),
        u_, 1);
  }
  ASSERT_GT(flow_.size(), 64u);
  AddTwoTasksThroughXOntoM2();
  std::vector<uint64_t> bits((flow_.size() + 63) / 64, 0);
  for (size_t slot = 0; slot < flow_.size(); ++slot) {
    if (flow_[slot] > 0) bits[slot / 64] |= uint64_t{1} << (slot % 64);
  }
  auto scanned = ExtractPlacements(net_, flow_);
  auto from_bits = ExtractPlacements(net_, flow_, &bits);
  ASSERT_THAT(scanned, IsOk());
  ASSERT_THAT(from_bits, IsOk());
  ASSERT_EQ(scanned->size(), from_bits->size());
  for (size_t i = 0; i < scanned->size(); ++i) {
    EXPECT_EQ((*scanned)[i].task_id, (*from_bits)[i].task_id);
    EXPECT_EQ((*scanned)[i].machine_id, (*from_bits)[i].machine_id);
  }
  // An empty slot's bit is ignored.
  const ArcSlot empty = net_.FindArc(t_[0], u_)->slot;
  bits[empty / 64] |= uint64_t{1} << (empty % 64);
  auto with_stray = ExtractPlacements(net_, flow_, &bits);
  ASSERT_THAT(with_stray, IsOk());
  for (size_t i = 0; i < scanned->size(); ++i) {
    EXPECT_EQ((*scanned)[i].machine_id, (*with_stray)[i].machine_id);
  }
}

// One extractor reused across calls gives what a fresh one gives each
// time: machines a call left in an aggregator's list (flow that did not
// balance there) never reach the next call's tasks.
TEST_F(PlacementExtractorTest, AReusedExtractorMatchesAFreshOne) {
  PlacementExtractor extractor;
  const auto expect_same = [&](const std::vector<int64_t>& flow) {
    auto reused = extractor.Extract(net_, flow);
    auto fresh = ExtractPlacements(net_, flow);
    ASSERT_THAT(reused, IsOk());
    ASSERT_THAT(fresh, IsOk());
    ASSERT_EQ(reused->size(), fresh->size());
    for (size_t i = 0; i < fresh->size(); ++i) {
      EXPECT_EQ((*reused)[i].task_id, (*fresh)[i].task_id);
      EXPECT_EQ((*reused)[i].machine_id, (*fresh)[i].machine_id) << i;
    }
  };
  expect_same(flow_);
  // X receives a unit from m2 and hands it to nobody: it stays in X's list.
  std::vector<int64_t> leftover(flow_.size(), 0);
  leftover[net_.FindArc(x_, m2_)->slot] = 1;
  leftover[net_.FindArc(m2_, sink_)->slot] = 1;
  expect_same(leftover);
  // Then a task sends a unit into X and nothing leaves X: a fresh walk
  // has no machine for it.
  std::vector<int64_t> task_only(flow_.size(), 0);
  task_only[net_.FindArc(t_[0], x_)->slot] = 1;
  expect_same(task_only);
  // After a failed call as well.
  std::vector<int64_t> two_units = flow_;
  two_units[net_.FindArc(t_[0], x_)->slot] = 2;
  two_units[net_.FindArc(x_, m2_)->slot] = 1;
  EXPECT_THAT(extractor.Extract(net_, two_units),
              StatusIs(absl::StatusCode::kInternal, "machine units"));
  expect_same(task_only);
  expect_same(flow_);
}

}  // namespace
}  // namespace flowsched::flow
