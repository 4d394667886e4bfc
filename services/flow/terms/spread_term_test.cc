#include "services/flow/terms/spread_term.h"

#include "gtest/gtest.h"
#include "services/flow/terms/term_test_util.h"

namespace flowsched::flow {
namespace {

using testing::MachineWith;
using testing::ShapeAsking;

// 4 cores, 16 GiB, 1 core used; tasks of 1 core and 2 GiB: CPU dominates.
TEST(SpreadTermTest, IsTheLargerUtilisationAfterKTasks) {
  const SpreadTerm term;
  const cluster::Machine machine = MachineWith(4000, 16, 1000, 0);
  const RequestShape shape = ShapeAsking(1000, 2);
  EXPECT_DOUBLE_EQ(term.Value(machine, shape, 1), 0.5);
  EXPECT_DOUBLE_EQ(term.Value(machine, shape, 2), 0.75);
  // Memory dominates a memory-heavy shape.
  EXPECT_DOUBLE_EQ(term.Value(machine, ShapeAsking(100, 8), 1), 0.5);
}

TEST(SpreadTermTest, IsCappedAtOneAndRisesWithK) {
  const SpreadTerm term;
  const cluster::Machine machine = MachineWith(4000, 16, 3000, 0);
  const RequestShape shape = ShapeAsking(1000, 1);
  double last = -1;
  for (int64_t k = 1; k <= 10; ++k) {
    const double value = term.Value(machine, shape, k);
    EXPECT_GE(value, last) << k;
    EXPECT_LE(value, 1.0);
    last = value;
  }
  EXPECT_DOUBLE_EQ(last, 1.0);
  EXPECT_TRUE(term.depends_on_k());
}

// A dimension the machine does not report counts 0%.
TEST(SpreadTermTest, UnreportedDimensionsCountZero) {
  const SpreadTerm term;
  EXPECT_DOUBLE_EQ(term.Value(MachineWith(0, 0), ShapeAsking(1000, 1), 3), 0);
  EXPECT_DOUBLE_EQ(term.Value(MachineWith(0, 10), ShapeAsking(1000, 1), 3),
                   0.3);
}

}  // namespace
}  // namespace flowsched::flow
