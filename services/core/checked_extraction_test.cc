#include "services/core/checked_extraction.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/solver/cost_scaling.h"

namespace flowsched::core {
namespace {

using ::flowsched::testing::IsOk;

// Two tasks, two machines, one unscheduled aggregator: task 1 prefers
// machine 101, task 2 machine 102; solved by cost scaling, then checked and
// extracted side by side.
class CheckAndExtractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    using flow::NodeKind;
    const flow::NodeId sink =
        net_.AddNode({.kind = NodeKind::kSink, .supply = -2});
    const flow::NodeId m1 =
        net_.AddNode({.kind = NodeKind::kMachine, .entity_id = 101});
    const flow::NodeId m2 =
        net_.AddNode({.kind = NodeKind::kMachine, .entity_id = 102});
    const flow::NodeId u =
        net_.AddNode({.kind = NodeKind::kJobUnscheduled, .entity_id = 1});
    const flow::NodeId t1 =
        net_.AddNode({.kind = NodeKind::kTask, .supply = 1, .entity_id = 1});
    const flow::NodeId t2 =
        net_.AddNode({.kind = NodeKind::kTask, .supply = 1, .entity_id = 2});
    ASSERT_THAT(net_.SetArc(t1, m1, 1, 1), IsOk());
    ASSERT_THAT(net_.SetArc(t1, m2, 1, 5), IsOk());
    ASSERT_THAT(net_.SetArc(t2, m2, 1, 1), IsOk());
    ASSERT_THAT(net_.SetArc(t1, u, 1, 50), IsOk());
    ASSERT_THAT(net_.SetArc(t2, u, 1, 50), IsOk());
    ASSERT_THAT(net_.SetArc(m1, sink, 1, 0), IsOk());
    ASSERT_THAT(net_.SetArc(m2, sink, 1, 0), IsOk());
    ASSERT_THAT(net_.SetArc(u, sink, 2, 0), IsOk());
    std::vector<flow::ArcSlot> slots;
    net_.ExportProblem(problem_, slots);
    auto solved = solver::CostScaling().Solve(problem_);
    ASSERT_THAT(solved, IsOk());
    solution_ = std::move(*solved);
    flow_by_slot_.assign(net_.arc_slot_count(), 0);
    for (size_t i = 0; i < slots.size(); ++i) {
      flow_by_slot_[slots[i]] += solution_.flow[i];
    }
  }
  flow::FlowNetwork net_;
  solver::McmfProblem problem_;
  solver::McmfSolution solution_;
  std::vector<int64_t> flow_by_slot_;
};

TEST_F(CheckAndExtractTest, AnOptimalRoundYieldsItsPlacements) {
  const CheckedPlacements out =
      CheckAndExtract(problem_, solution_, net_, flow_by_slot_);
  ASSERT_THAT(out.verdict, IsOk());
  ASSERT_EQ(out.placements.size(), 2u);
  EXPECT_EQ(out.placements[0].machine_id, 101u);
  EXPECT_EQ(out.placements[1].machine_id, 102u);
  EXPECT_GE(out.wall_ms, 0);
}

TEST_F(CheckAndExtractTest, ARejectedSolutionYieldsNoPlacements) {
  // Raise one potential: complementary slackness breaks, feasibility holds,
  // so the extraction alone would succeed.
  solution_.potentials[0] += 1000;
  const CheckedPlacements out =
      CheckAndExtract(problem_, solution_, net_, flow_by_slot_);
  EXPECT_FALSE(out.verdict.ok());
  EXPECT_TRUE(out.placements.empty());
}

TEST_F(CheckAndExtractTest, AnUntraceableFlowIsReportedAfterAPassingCheck) {
  flow_by_slot_.resize(1);  // fewer slots than the network has
  const CheckedPlacements out =
      CheckAndExtract(problem_, solution_, net_, flow_by_slot_);
  EXPECT_FALSE(out.verdict.ok());
  EXPECT_TRUE(out.placements.empty());
}

}  // namespace
}  // namespace flowsched::core
