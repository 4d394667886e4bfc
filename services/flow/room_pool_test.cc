#include "services/flow/room_pool.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/cluster/resource_fit.h"
#include "services/common/status_matchers.h"
#include "services/flow/flow_network.h"
#include "services/flow/network_builder.h"

namespace flowsched::flow {
namespace {

using ::flowsched::testing::IsOk;

RequestShape Shape(int64_t cpu, int64_t memory) {
  RequestShape shape;
  shape.key = "s";
  shape.ask.request.cpu_millis = cpu;
  shape.ask.request.memory_bytes = memory;
  shape.waiting = 1;
  return shape;
}

// 4 slots, 4,000 CPU millis and 8 GiB; `running` tasks of 1,000 millis
// and 1 GiB each.
cluster::Machine Machine(uint32_t running) {
  cluster::Machine machine;
  machine.id = MachineId(1);
  machine.task_slots = 4;
  machine.capacity = {4000, int64_t{8} << 30, 0};
  for (uint32_t t = 0; t < running; ++t) {
    machine.running.insert(TaskId(t + 1));
    cluster::AddResources(machine.allocated, {1000, int64_t{1} << 30, 0}, 1);
  }
  return machine;
}

TEST(RoomPoolTest, TakesShapesAskingForCpuMemoryOrNetworkOnly) {
  EXPECT_TRUE(RoomPool::Takes(Shape(500, 0)));
  EXPECT_TRUE(RoomPool::Takes(Shape(0, 1 << 20)));
  EXPECT_FALSE(RoomPool::Takes(Shape(0, 0)));  // a slot only: the slot pool
  RequestShape scalar = Shape(500, 0);
  scalar.ask.request.scalars.Set("example.com/fpga", 1);
  EXPECT_FALSE(RoomPool::Takes(scalar));
  RequestShape device = Shape(500, 0);
  device.ask.accelerator.milli = 250;
  EXPECT_FALSE(RoomPool::Takes(device));
  RequestShape labelled = Shape(500, 0);
  labelled.ask.required_labels = {{"zone", "a"}};
  EXPECT_FALSE(RoomPool::Takes(labelled));
  RequestShape apart = Shape(500, 0);
  apart.different_machines_job = JobId(3);
  EXPECT_FALSE(RoomPool::Takes(apart));
}

// The bound is each resource's largest ask, and a machine is held only
// when that bound fits every free slot.
TEST(RoomPoolTest, HoldsAMachineOnlyWhenEveryFreeSlotFitsTheBound) {
  RoomPool pool;
  // CPU from one shape, memory from another: 1,000 millis and 2 GiB.
  EXPECT_TRUE(pool.SetBound(
      {Shape(1000, int64_t{1} << 30), Shape(250, int64_t{2} << 30)}));
  EXPECT_TRUE(pool.takes_any());
  EXPECT_TRUE(pool.Holds(Machine(0)));   // 4 x (1,000, 2 GiB) fit
  EXPECT_TRUE(pool.Holds(Machine(2)));   // 2 x (1,000, 2 GiB) in (2,000, 6 GiB)
  EXPECT_FALSE(pool.Holds(Machine(4)));  // no free slot
  pool.SetBound({Shape(1001, 0)});
  EXPECT_FALSE(pool.Holds(Machine(0)));  // 3 of 4 slots
  pool.SetBound({Shape(100, int64_t{3} << 30)});
  EXPECT_FALSE(pool.Holds(Machine(1)));  // 7 GiB: 2 of 3 slots
  // A task limit counts only the slots it leaves.
  RoomPool limited({.max_tasks = 3, .network_by_use = false});
  limited.SetBound({Shape(1300, 0)});
  EXPECT_TRUE(limited.Holds(Machine(0)));   // 3 x 1,300 in 4,000
  EXPECT_FALSE(limited.Holds(Machine(3)));  // at its limit
}

// With no shape it takes waiting and none of its tasks running, R holds
// no machine: its arcs are all closed.
TEST(RoomPoolTest, WithoutAShapeItTakesItHoldsNothing) {
  RoomPool pool;
  EXPECT_TRUE(pool.SetBound({Shape(1000, 0)}));
  EXPECT_TRUE(pool.Holds(Machine(0)));
  RequestShape device = Shape(1000, 0);
  device.ask.accelerator.whole = 1;
  EXPECT_FALSE(pool.SetBound({device}));
  EXPECT_FALSE(pool.takes_any());
  EXPECT_FALSE(pool.Holds(Machine(0)));
  EXPECT_TRUE(pool.SetBound({device, Shape(1000, 0)}));
  EXPECT_TRUE(pool.Holds(Machine(0)));
  EXPECT_FALSE(pool.SetBound({}));
  EXPECT_FALSE(pool.Holds(Machine(0)));
}

// Running tasks asking as R's shapes do keep their asks in the bound, so
// that a round without an arrival does not reopen or close R's arcs.
TEST(RoomPoolTest, RunningTasksKeepTheirAsksInTheBound) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  ASSERT_THAT(state.Apply({"e", 1, "t",
                           cluster::MachineAdded{
                               MachineId(1), "r", {16'000, 0, 0}, 4, {}}},
                          1, changes),
              IsOk());
  cluster::JobSubmitted job{JobId(1), "j", 0, {}};
  job.tasks.resize(2);
  job.tasks[0].id = TaskId(1);
  job.tasks[0].request.cpu_millis = 5000;
  job.tasks[1].id = TaskId(2);  // asks for a slot only
  ASSERT_THAT(state.Apply({"e", 1, "t", job}, 1, changes), IsOk());
  RoomPool pool;
  pool.TrackRunning(changes, state, /*all=*/true);
  EXPECT_FALSE(pool.SetBound({}));
  EXPECT_FALSE(pool.Holds(state.machines().at(MachineId(1))));  // none runs
  changes.Clear();
  ASSERT_THAT(state.Place(TaskId(1), MachineId(1), 2, changes), IsOk());
  pool.TrackRunning(changes, state, /*all=*/false);
  EXPECT_FALSE(pool.SetBound({}));
  // 11,000 millis left for 3 free slots: 5,000 each does not fit.
  EXPECT_FALSE(pool.Holds(state.machines().at(MachineId(1))));
  // A smaller waiting ask does not lower the bound below the running one.
  EXPECT_TRUE(pool.SetBound({Shape(1000, 0)}));
  EXPECT_FALSE(pool.Holds(state.machines().at(MachineId(1))));
  changes.Clear();
  ASSERT_THAT(
      state.Apply({"e", 1, "t", cluster::TaskFinished{JobId(1), TaskId(1)}}, 1,
                  changes),
      IsOk());
  pool.TrackRunning(changes, state, /*all=*/false);
  EXPECT_TRUE(pool.SetBound({Shape(1000, 0)}));
  EXPECT_TRUE(pool.Holds(state.machines().at(MachineId(1))));
  EXPECT_FALSE(pool.SetBound({}));
  EXPECT_FALSE(pool.Holds(state.machines().at(MachineId(1))));  // none runs
}

// Open: the slot pool's pieces; closed: the same pieces without capacity;
// an unchanged machine's arc is not set again.
TEST(RoomPoolTest, SetsOpenAndClosedArcsAndOnlyWhatChanged) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  for (uint64_t m = 1; m <= 3; ++m) {
    ASSERT_THAT(
        state.Apply(
            {"e", 1, "t",
             cluster::MachineAdded{
                 MachineId(m), "r", {m == 3 ? 2000 : 4000, 0, 0}, 4, {}}},
            1, changes),
        IsOk());
  }
  FlowNetwork network;
  NetworkBuilder builder(network);
  network.set_record_changes(true);
  for (uint64_t m = 1; m <= 3; ++m) builder.EnsureMachineNode(MachineId(m));
  RoomPool pool;
  pool.SetBound({Shape(1000, 0)});
  const absl::flat_hash_set<MachineId> closed = {MachineId(2)};
  ASSERT_THAT(pool.SetArcs(state, closed, 10, builder), IsOk());
  const NodeId r = pool.EnsureNode(builder);
  const auto capacity = [&](uint64_t m) -> int64_t {
    const auto arc = network.FindArc(r, builder.FindMachineNode(MachineId(m)));
    if (!arc.has_value()) {
      ADD_FAILURE() << "no arc from the room pool to machine " << m;
      return -1;
    }
    int64_t total = arc->capacity;
    for (const ArcSegment& piece : arc->extra_segments) {
      total += piece.capacity;
    }
    EXPECT_EQ(arc->extra_segments.size(), 3u);  // one piece per slot
    return total;
  };
  EXPECT_EQ(capacity(1), 4);  // held: every free slot
  EXPECT_EQ(capacity(2), 0);  // named closed
  EXPECT_EQ(capacity(3), 0);  // 2,000 millis: 2 of 4 slots
  const auto piece_cost = [&](uint64_t m, size_t piece) {
    return network.FindArc(r, builder.FindMachineNode(MachineId(m)))
        ->extra_segments[piece]
        .cost;
  };
  EXPECT_EQ(piece_cost(1, 2), 30);  // the fourth task on it costs 10 * 3
  network.TakeChanges();
  ASSERT_THAT(pool.SetArcs(state, closed, 10, builder), IsOk());
  EXPECT_TRUE(network.TakeChanges().empty());
  ASSERT_THAT(pool.SetArcs(state, {}, 10, builder), IsOk());
  EXPECT_EQ(network.TakeChanges().size(), 1u);  // machine 2's arc alone
  EXPECT_EQ(capacity(2), 4);
  // A machine removed and added again may get its node id back without
  // R's arc: a sync names it, and NoteChanged makes SetArcs set it again.
  const NodeId m1 = builder.FindMachineNode(MachineId(1));
  builder.RemoveMachineNode(MachineId(1));
  ASSERT_EQ(builder.EnsureMachineNode(MachineId(1)), m1);
  cluster::ChangeSet resynced;
  resynced.machines.insert(MachineId(1));
  pool.NoteChanged(resynced);
  ASSERT_THAT(pool.SetArcs(state, {}, 10, builder), IsOk());
  EXPECT_EQ(capacity(1), 4);
}

// With nothing R takes waiting or running, every arc stays closed whatever
// the running counts: a pass visits only the machines a sync named.
TEST(RoomPoolTest, WithNothingToCarryOnlyNamedMachinesAreVisited) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  FlowNetwork network;
  NetworkBuilder builder(network);
  const auto add = [&](uint64_t m) {
    ASSERT_THAT(state.Apply({"e", 1, "t",
                             cluster::MachineAdded{
                                 MachineId(m), "r", {4000, 0, 0}, 4, {}}},
                            1, changes),
                IsOk());
    builder.EnsureMachineNode(MachineId(m));
  };
  add(1);
  RoomPool pool;
  EXPECT_FALSE(pool.SetBound({}));
  ASSERT_THAT(pool.SetArcs(state, {}, 10, builder), IsOk());
  const NodeId r = pool.EnsureNode(builder);
  const auto arc_to = [&](uint64_t m) {
    return network.FindArc(r, builder.FindMachineNode(MachineId(m)));
  };
  ASSERT_TRUE(arc_to(1).has_value());
  EXPECT_EQ(arc_to(1)->capacity, 0);
  changes.Clear();
  add(2);
  ASSERT_THAT(pool.SetArcs(state, {}, 10, builder), IsOk());
  EXPECT_FALSE(arc_to(2).has_value());  // not named: not visited
  pool.NoteChanged(changes);
  ASSERT_THAT(pool.SetArcs(state, {}, 10, builder), IsOk());
  ASSERT_TRUE(arc_to(2).has_value());
  EXPECT_EQ(arc_to(2)->capacity, 0);
}

// While the bound stays, a pass visits only the machines noted since the
// last and those closed now or then; a new bound visits every machine.
TEST(RoomPoolTest, WhileTheBoundStaysOnlyNotedOrClosedMachinesAreVisited) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  FlowNetwork network;
  NetworkBuilder builder(network);
  for (uint64_t m = 1; m <= 3; ++m) {
    ASSERT_THAT(state.Apply({"e", 1, "t",
                             cluster::MachineAdded{
                                 MachineId(m), "r", {4000, 0, 4000}, 4, {}}},
                            1, changes),
                IsOk());
    builder.EnsureMachineNode(MachineId(m));
  }
  // Network counted by reported use: a usage report moves a machine's room.
  RoomPool pool(RoomLimits{.network_by_use = true});
  RequestShape shape = Shape(1000, 0);
  shape.ask.request.network_bytes_per_sec = 500;
  ASSERT_TRUE(pool.SetBound({shape}));
  ASSERT_THAT(pool.SetArcs(state, {MachineId(3)}, 10, builder), IsOk());
  const NodeId r = pool.EnsureNode(builder);
  const auto open = [&](uint64_t m) {
    const auto arc = network.FindArc(r, builder.FindMachineNode(MachineId(m)));
    if (!arc.has_value()) return int64_t{-1};
    int64_t total = arc->capacity;
    for (const ArcSegment& piece : arc->extra_segments) total += piece.capacity;
    return total;
  };
  EXPECT_EQ(open(1), 4);
  EXPECT_EQ(open(2), 4);
  EXPECT_EQ(open(3), 0);
  // Machines 1 and 2 report 3,000 of 4,000 network in use: 4 slots of 500
  // no longer fit. Only machine 1's change is noted.
  changes.Clear();
  for (uint64_t m = 1; m <= 2; ++m) {
    ASSERT_THAT(state.Apply({"e", 2, "t",
                             cluster::MachineUsage{MachineId(m), {0, 0, 3000}}},
                            2, changes),
                IsOk());
  }
  cluster::ChangeSet noted;
  noted.machines.insert(MachineId(1));
  pool.NoteChanged(noted);
  ASSERT_TRUE(pool.SetBound({shape}));
  ASSERT_THAT(pool.SetArcs(state, {}, 10, builder), IsOk());
  EXPECT_EQ(open(1), 0);  // noted
  EXPECT_EQ(open(2), 4);  // not noted, not closed: not visited
  EXPECT_EQ(open(3), 4);  // closed at the last pass: visited
  // A smaller bound (one 200 fits 4 times in the 1,000 left) moves every
  // machine's arc: every machine is visited.
  shape.ask.request.network_bytes_per_sec = 200;
  ASSERT_TRUE(pool.SetBound({shape}));
  ASSERT_THAT(pool.SetArcs(state, {}, 10, builder), IsOk());
  EXPECT_EQ(open(1), 4);
  EXPECT_EQ(open(2), 4);
  EXPECT_EQ(open(3), 4);
}

}  // namespace
}  // namespace flowsched::flow
