#include "services/flow/terms/pack_term.h"

#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/flow/terms/term_test_util.h"

namespace flowsched::flow {
namespace {

using ::flowsched::testing::IsOk;
using testing::MachineWith;
using testing::ShapeAsking;

// The normaliser is the largest machine of the state Prepare saw.
class PackTermTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster::ChangeSet changes;
    ASSERT_THAT(state_.Apply(cluster::ClusterEvent{"e", 1, "t",
                                                   cluster::MachineAdded{
                                                       MachineId(1),
                                                       "r",
                                                       {8000, 32 * kGiB, 0},
                                                       8,
                                                       {},
                                                       {{4, "A10", 1000, 0}}}},
                             1, changes),
                IsOk());
    term_.Prepare(state_);
  }
  cluster::ClusterState state_;
  PackTerm term_;
};

// What an empty largest machine keeps after a task, over the three
// dimensions: CPU (8000 - 2000) / 8000, memory (32 - 8) / 32, devices
// (4000 - 0) / 4000: (0.75 + 0.75 + 1) / 3.
TEST_F(PackTermTest, IsTheShareOfTheLargestMachineLeftAfterOneTask) {
  const cluster::Machine& largest = *state_.FindMachine(MachineId(1));
  EXPECT_NEAR(term_.Value(largest, ShapeAsking(2000, 8), 1), 2.5 / 3, 1e-12);
  EXPECT_FALSE(term_.depends_on_k());
  EXPECT_DOUBLE_EQ(term_.Value(largest, ShapeAsking(2000, 8), 1),
                   term_.Value(largest, ShapeAsking(2000, 8), 7));
}

// A fuller machine and a smaller one cost less; one the task fills
// exactly (no devices) costs 0.
TEST_F(PackTermTest, FullerMachinesCostLess) {
  const RequestShape shape = ShapeAsking(1000, 4);
  const double empty = term_.Value(MachineWith(8000, 32), shape, 1);
  const double half = term_.Value(MachineWith(8000, 32, 4000, 16), shape, 1);
  const double small = term_.Value(MachineWith(2000, 8), shape, 1);
  EXPECT_LT(half, empty);
  EXPECT_LT(small, empty);
  EXPECT_DOUBLE_EQ(term_.Value(MachineWith(8000, 32, 7000, 28), shape, 1), 0);
}

// Whole devices count a whole unit each, so two on devices of half a
// unit take more than the machine has free: the leftover is negative (the
// machine looks fuller than full, as gpu-fgd priced it), within [-1, 1].
TEST_F(PackTermTest, ATaskTakingMoreThanTheFreeRoomLeavesANegativeShare) {
  cluster::Machine machine = MachineWith(8000, 32, 8000, 32);
  machine.devices = cluster::ExpandAccelerators({{2, "A10", 500, 0}});
  RequestShape shape = ShapeAsking(0, 0);
  shape.ask.accelerator.whole = 2;
  // Devices: (1,000 - 2,000) / 4,000 of the largest machine's.
  EXPECT_NEAR(term_.Value(machine, shape, 1), -0.25 / 3, 1e-12);
}

// Prepare says when the largest machine (the normaliser) changed.
TEST_F(PackTermTest, PrepareSaysWhenTheLargestMachineChanged) {
  EXPECT_FALSE(term_.Prepare(state_));
  cluster::ChangeSet changes;
  ASSERT_THAT(state_.Apply(
                  cluster::ClusterEvent{
                      "e", 1, "t",
                      cluster::MachineAdded{
                          MachineId(2), "r", {16000, 32 * kGiB, 0}, 8, {}, {}}},
                  1, changes),
              IsOk());
  EXPECT_TRUE(term_.Prepare(state_));
  EXPECT_FALSE(term_.Prepare(state_));
}

}  // namespace
}  // namespace flowsched::flow
