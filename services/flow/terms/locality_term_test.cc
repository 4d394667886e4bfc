#include "services/flow/terms/locality_term.h"

#include "gtest/gtest.h"
#include "services/flow/terms/term_test_util.h"

namespace flowsched::flow {
namespace {

using testing::MachineWith;
using testing::ShapeAsking;

TEST(LocalityTermTest, IsTheShareOfTheInputOutsideTheMachinesRack) {
  const LocalityTerm term;
  const auto in = [](const char* rack) {
    cluster::Machine machine = MachineWith(4000, 16);
    machine.rack = rack;
    return machine;
  };
  RequestShape shape = ShapeAsking(1000, 1);
  EXPECT_DOUBLE_EQ(term.Value(in("r1"), shape, 1), 0);  // no input racks
  shape.input_racks = {{"r1", 0.75}, {"r2", 0.25}};
  EXPECT_DOUBLE_EQ(term.Value(in("r1"), shape, 1), 0.25);
  EXPECT_DOUBLE_EQ(term.Value(in("r2"), shape, 1), 0.75);
  EXPECT_DOUBLE_EQ(term.Value(in("r3"), shape, 1), 1);
  EXPECT_DOUBLE_EQ(term.Value(in("r3"), shape, 9), 1);
  EXPECT_FALSE(term.depends_on_k());
}

}  // namespace
}  // namespace flowsched::flow
