#include "services/flow/terms/machine_order_term.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/flow/terms/term_test_util.h"

namespace flowsched::flow {
namespace {

using ::flowsched::testing::IsOk;
using testing::ShapeAsking;

class MachineOrderTermTest : public ::testing::Test {
 protected:
  void Apply(cluster::EventBody body) {
    ASSERT_THAT(
        state_.Apply(cluster::ClusterEvent{"e", 1, "t", body}, 1, changes_),
        IsOk());
  }
  void SetUp() override {
    for (uint64_t id : {9, 2, 7, 5}) {
      Apply(cluster::MachineAdded{MachineId(id), "r", {1000, 0, 0}, 4, {}});
    }
  }
  [[nodiscard]] double ValueOf(uint64_t id) const {
    return term_.Value(*state_.FindMachine(MachineId(id)), ShapeAsking(100, 0),
                       1);
  }
  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
  MachineOrderTerm term_;
};

// Ids 2, 5, 7, 9 are at 0, 1/4, 2/4, 3/4 of the order.
TEST_F(MachineOrderTermTest, IsThePositionInIdOrder) {
  ASSERT_TRUE(term_.Prepare(state_));
  EXPECT_DOUBLE_EQ(ValueOf(2), 0);
  EXPECT_DOUBLE_EQ(ValueOf(5), 0.25);
  EXPECT_DOUBLE_EQ(ValueOf(7), 0.5);
  EXPECT_DOUBLE_EQ(ValueOf(9), 0.75);
  EXPECT_FALSE(term_.depends_on_k());
}

// A machine that comes or goes moves the positions; nothing else does.
TEST_F(MachineOrderTermTest, PrepareSaysWhenPositionsMoved) {
  ASSERT_TRUE(term_.Prepare(state_));
  EXPECT_FALSE(term_.Prepare(state_));
  Apply(cluster::MachineRemoved{MachineId(5)});
  EXPECT_TRUE(term_.Prepare(state_));
  EXPECT_NEAR(ValueOf(7), 1.0 / 3, 1e-4);  // step 3,333 of 10,000
  Apply(cluster::MachineAdded{MachineId(1), "r", {1000, 0, 0}, 4, {}});
  EXPECT_TRUE(term_.Prepare(state_));
  EXPECT_DOUBLE_EQ(ValueOf(1), 0);
  EXPECT_DOUBLE_EQ(ValueOf(2), 0.25);
}

}  // namespace
}  // namespace flowsched::flow
