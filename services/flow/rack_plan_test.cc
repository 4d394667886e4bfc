#include "services/flow/rack_plan.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/byte_units.h"
#include "services/common/status_matchers.h"

namespace flowsched::flow {
namespace {

using ::flowsched::testing::IsOk;
using ::testing::ElementsAre;

class RackPlanTest : public ::testing::Test {
 protected:
  void AddMachine(uint64_t id, std::string rack, int64_t cpu, uint32_t slots,
                  int64_t memory = 4 * kGiB) {
    cluster::ChangeSet changes;
    ASSERT_THAT(
        state_.Apply({"e", 1, "t",
                      cluster::MachineAdded{MachineId(id),
                                            std::move(rack),
                                            {cpu, cpu > 0 ? memory : 0, 0},
                                            slots,
                                            {},
                                            {}}},
                     1, changes),
        IsOk());
  }
  static RequestShape Shape(int64_t cpu, int64_t waiting,
                            std::vector<RackShare> racks) {
    RequestShape shape;
    shape.ask.request = {cpu, cpu > 0 ? kGiB / 4 : 0, 0};
    shape.waiting = waiting;
    shape.input_racks = std::move(racks);
    return shape;
  }
  // The planned racks' names, "none" for kNoRack.
  std::vector<std::string> Plan(const std::vector<RequestShape>& shapes,
                                int64_t max_tasks_per_machine = 0) {
    auto plan = PlanRacks(state_, shapes, max_tasks_per_machine);
    EXPECT_THAT(plan, IsOk());
    std::vector<std::string> racks;
    if (!plan.ok()) return racks;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const int r = (*plan)[i];
      racks.push_back(r == kNoRack ? "none" : shapes[i].input_racks[r].rack);
    }
    return racks;
  }

  cluster::ClusterState state_;
};

// r1 and r2 each have room for one task. Both shapes read mostly in r1;
// the first reads as much in r2 (a replicated block), the second nowhere
// else. The rack goes to the one that loses by leaving.
TEST_F(RackPlanTest, TheRackGoesToTheWorkThatLosesMostByLeaving) {
  AddMachine(1, "r1", 1000, 8);
  AddMachine(2, "r2", 1000, 8);
  EXPECT_THAT(Plan({Shape(1000, 1, {{"r1", 1.0}, {"r2", 1.0}}),
                    Shape(1000, 1, {{"r1", 1.0}})}),
              ElementsAre("r2", "r1"));
}

// r1 has room for 4 cores, r2 plenty but holds no input. Four 1-core tasks
// and one 4-core task read all their input in r1: moving the big one reads
// one input across racks, moving the four reads four.
TEST_F(RackPlanTest, ARacksRoomGoesWhereItSavesTheMostInput) {
  AddMachine(1, "r1", 4000, 8);
  AddMachine(2, "r2", 16000, 8);
  EXPECT_THAT(
      Plan({Shape(4000, 1, {{"r1", 1.0}}), Shape(1000, 4, {{"r1", 1.0}})}),
      ElementsAre("none", "r1"));
}

// Room counts the least free dimension, slots included: with no CPU or
// memory reported, r1's one free slot holds one of the two tasks. Work
// without input is not planned.
TEST_F(RackPlanTest, RoomIsTheLeastFreeDimension) {
  AddMachine(1, "r1", 0, 1);
  AddMachine(2, "r2", 0, 1);
  AddMachine(3, "r3", 0, 4);
  EXPECT_THAT(Plan({Shape(0, 1, {{"r1", 1.0}, {"r2", 0.5}}),
                    Shape(0, 1, {{"r1", 1.0}}), Shape(0, 3, {})}),
              ElementsAre("r2", "r1", "none"));
}

// Room for everything in r1 and r2, but r1 is wanted: work reading only
// there would take half its room. The task reading as much in r2 (a
// replicated block) plans on r2, so r1's room stays for r1's work.
TEST_F(RackPlanTest, TiesGoToTheLessWantedRack) {
  AddMachine(1, "r1", 8000, 16);
  AddMachine(2, "r2", 8000, 16);
  EXPECT_THAT(Plan({Shape(1000, 1, {{"r1", 1.0}, {"r2", 1.0}}),
                    Shape(1000, 4, {{"r1", 1.0}})}),
              ElementsAre("r2", "r1"));
}

// A rack's room is its machines' least free dimension: r1 has the CPU for
// both tasks but the memory for one, so the task with most of its input in
// the other rack too goes there. That rack is named "" (machines without
// one).
TEST_F(RackPlanTest, RoomIsBoundedByMemory) {
  AddMachine(1, "r1", 16000, 16, kGiB / 2);
  AddMachine(2, "", 16000, 16, 8 * kGiB);
  EXPECT_THAT(Plan({Shape(1000, 1, {{"r1", 1.0}, {"", 0.9}}),
                    Shape(1000, 1, {{"r1", 1.0}})}),
              ElementsAre("", "r1"));
}

// Room for both tasks in r1, unless each machine may run one task: then
// the task reading only in r1 stays and the one with half its input in r2
// moves.
TEST_F(RackPlanTest, RoomIsBoundedByTheTaskLimit) {
  AddMachine(1, "r1", 16000, 16);
  AddMachine(2, "r2", 16000, 16);
  const std::vector<RequestShape> shapes = {
      Shape(1000, 1, {{"r1", 1.0}, {"r2", 0.5}}),
      Shape(1000, 1, {{"r1", 1.0}})};
  EXPECT_THAT(Plan(shapes), ElementsAre("r1", "r1"));
  EXPECT_THAT(Plan(shapes, 1), ElementsAre("r2", "r1"));
}

// A rack with no machine now is not planned; nothing waiting, nothing
// planned.
TEST_F(RackPlanTest, PlansOnlyRacksWithMachinesAndWaitingWork) {
  AddMachine(1, "r1", 1000, 8);
  EXPECT_THAT(Plan({Shape(1000, 1, {{"gone", 1.0}, {"r1", 0.2}}),
                    Shape(1000, 0, {{"r1", 1.0}})}),
              ElementsAre("r1", "none"));
  EXPECT_THAT(Plan({}), ElementsAre());
}

}  // namespace
}  // namespace flowsched::flow
