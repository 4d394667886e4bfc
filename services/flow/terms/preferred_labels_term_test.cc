#include "services/flow/terms/preferred_labels_term.h"

#include "gtest/gtest.h"
#include "services/flow/terms/term_test_util.h"

namespace flowsched::flow {
namespace {

using testing::MachineWith;
using testing::ShapeAsking;

TEST(PreferredLabelsTermTest, IsMinusOneWhereEveryPreferredLabelMatches) {
  const PreferredLabelsTerm term;
  cluster::Machine machine = MachineWith(4000, 16);
  machine.labels = {{"zone", "a"}, {"disk", "ssd"}};
  RequestShape shape = ShapeAsking(1000, 1);
  EXPECT_DOUBLE_EQ(term.Value(machine, shape, 1), 0);  // no preference
  shape.preferred = {{"zone", "a"}};
  EXPECT_DOUBLE_EQ(term.Value(machine, shape, 1), -1);
  shape.preferred = {{"zone", "a"}, {"disk", "ssd"}};
  EXPECT_DOUBLE_EQ(term.Value(machine, shape, 5), -1);
  shape.preferred = {{"zone", "a"}, {"disk", "hdd"}};
  EXPECT_DOUBLE_EQ(term.Value(machine, shape, 1), 0);
  EXPECT_FALSE(term.depends_on_k());
}

}  // namespace
}  // namespace flowsched::flow
