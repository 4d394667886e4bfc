#include "services/flow/terms/task_count_term.h"

#include "gtest/gtest.h"
#include "services/flow/terms/term_test_util.h"

namespace flowsched::flow {
namespace {

using testing::MachineWith;
using testing::ShapeAsking;

// The k-th new task on a machine running r tasks counts the r + k - 1
// before it, whatever the shape asks or the machine has free.
TEST(TaskCountTermTest, CountsTheTasksBeforeTheKth) {
  const TaskCountTerm term;
  EXPECT_TRUE(term.depends_on_k());
  cluster::Machine machine = MachineWith(8000, 32);
  EXPECT_EQ(term.Value(machine, ShapeAsking(1000, 4), 1), 0);
  EXPECT_EQ(term.Value(machine, ShapeAsking(1000, 4), 3), 2);
  machine.running = {TaskId(1), TaskId(2), TaskId(5)};
  EXPECT_EQ(term.Value(machine, ShapeAsking(1000, 4), 1), 3);
  EXPECT_EQ(term.Value(machine, ShapeAsking(0, 0), 4), 6);
  EXPECT_EQ(term.Value(MachineWith(1000, 1, 900, 1), ShapeAsking(0, 0), 2), 1);
}

}  // namespace
}  // namespace flowsched::flow
