#include "services/flow/terms/locality_term.h"

#include "gtest/gtest.h"
#include "services/flow/terms/term_test_util.h"

namespace flowsched::flow {
namespace {

using testing::MachineWith;
using testing::ShapeAsking;

TEST(LocalityTermTest, IsOneOutsideTheShapesInputRack) {
  const LocalityTerm term;
  cluster::Machine in_rack = MachineWith(4000, 16);
  in_rack.rack = "r1";
  cluster::Machine elsewhere = MachineWith(4000, 16);
  elsewhere.rack = "r2";
  RequestShape shape = ShapeAsking(1000, 1);
  EXPECT_DOUBLE_EQ(term.Value(in_rack, shape, 1), 0);  // no input rack
  EXPECT_DOUBLE_EQ(term.Value(elsewhere, shape, 1), 0);
  shape.input_rack = "r1";
  EXPECT_DOUBLE_EQ(term.Value(in_rack, shape, 1), 0);
  EXPECT_DOUBLE_EQ(term.Value(elsewhere, shape, 1), 1);
  EXPECT_DOUBLE_EQ(term.Value(elsewhere, shape, 9), 1);
  EXPECT_FALSE(term.depends_on_k());
}

}  // namespace
}  // namespace flowsched::flow
