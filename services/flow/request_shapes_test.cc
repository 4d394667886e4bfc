#include "services/flow/request_shapes.h"

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/cluster/resource_fit.h"
#include "services/common/status_matchers.h"

namespace flowsched::flow {
namespace {

using ::flowsched::testing::IsOk;

cluster::ClusterEvent Event(cluster::EventBody body) {
  return cluster::ClusterEvent{"e", 0, "test", std::move(body)};
}

cluster::MachineAdded Machine(uint64_t id, uint32_t slots, int64_t cpu,
                              uint32_t gpus, int64_t gpu_milli = 1000) {
  cluster::MachineAdded m;
  m.machine = MachineId(id);
  m.rack = "r";
  m.task_slots = slots;
  m.capacity.cpu_millis = cpu;
  if (gpus > 0) {
    cluster::AcceleratorGroup group;
    group.count = gpus;
    group.model = "a10";
    group.milli_per_device = gpu_milli;
    m.accelerators.push_back(group);
  }
  return m;
}

cluster::TaskSpec Ask(uint64_t id, int64_t cpu, uint32_t whole, int64_t milli) {
  cluster::TaskSpec spec;
  spec.id = TaskId(id);
  spec.request.cpu_millis = cpu;
  spec.accelerator.whole = whole;
  spec.accelerator.milli = milli;
  return spec;
}

// A machine with less free CPU or memory than every shape asks for fits
// none of them; one that does not report the resource is not bounded by it.
TEST(RequestShapesTest, MayFitAnyComparesFreeRoomWithTheSmallestAsk) {
  cluster::Machine machine;
  machine.capacity = {1000, 4 << 20, 0};
  machine.allocated = {500, 1 << 20, 0};
  std::vector<RequestShape> shapes(2);
  shapes[0].ask.request = {1000, 1 << 20, 0};
  shapes[1].ask.request = {600, 2 << 20, 0};
  EXPECT_FALSE(MayFitAny(machine, SmallestAskOf(shapes)));  // CPU
  shapes[1].ask.request.cpu_millis = 500;
  EXPECT_TRUE(MayFitAny(machine, SmallestAskOf(shapes)));
  shapes[0].ask.request.memory_bytes = 4 << 20;
  shapes[1].ask.request.memory_bytes = 4 << 20;
  EXPECT_FALSE(MayFitAny(machine, SmallestAskOf(shapes)));  // memory
  machine.capacity.memory_bytes = 0;                        // not reported
  EXPECT_TRUE(MayFitAny(machine, SmallestAskOf(shapes)));
  EXPECT_TRUE(MayFitAny(machine, SmallestAskOf({})));
}

// One waiting task's shape is the one WaitingShapes gives it: a
// different-machines job's covers the job's waiting tasks and reads no
// racks; another task's carries its input racks. A running task has none.
TEST(RequestShapesTest, WaitingShapeOfIsTheTasksShape) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  cluster::MachineAdded m = Machine(1, 4, 8000, 0);
  m.rack = "r1";
  ASSERT_THAT(state.Apply(Event(m), 0, changes), IsOk());
  cluster::JobSubmitted apart{
      JobId(1), "j", 0, {Ask(1, 1000, 0, 0), Ask(2, 3000, 0, 0)}};
  apart.different_machines = true;
  apart.tasks[0].input = {{MachineId(1), "r1", 64 << 20}};
  ASSERT_THAT(state.Apply(Event(apart), 0, changes), IsOk());
  cluster::TaskSpec reads = Ask(3, 500, 0, 0);
  reads.input = {{MachineId(1), "r1", 64 << 20}};
  ASSERT_THAT(state.Apply(Event(cluster::JobSubmitted{
                              JobId(2), "j", 0, {reads, Ask(4, 700, 0, 0)}}),
                          0, changes),
              IsOk());
  const std::vector<RequestShape> all = WaitingShapes(state);
  const auto find = [&](const std::string& key) {
    return *std::find_if(all.begin(), all.end(),
                         [&](const RequestShape& s) { return s.key == key; });
  };
  const std::optional<RequestShape> job_shape =
      WaitingShapeOf(*state.FindTask(TaskId(1)), state);
  ASSERT_TRUE(job_shape.has_value());
  EXPECT_EQ(job_shape->ask.request.cpu_millis, 3000);
  EXPECT_EQ(job_shape->waiting, 2);
  EXPECT_EQ(job_shape->ask, find(job_shape->key).ask);
  EXPECT_TRUE(job_shape->input_racks.empty());
  const std::optional<RequestShape> own =
      WaitingShapeOf(*state.FindTask(TaskId(3)), state);
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(own->ask, find(own->key).ask);
  EXPECT_EQ(own->input_racks, (std::vector<RackShare>{{"r1", 1.0}}));
  ASSERT_THAT(state.Place(TaskId(4), MachineId(1), 0, changes), IsOk());
  EXPECT_FALSE(WaitingShapeOf(*state.FindTask(TaskId(4)), state).has_value());
}

// Machines with a free slot, fewest running first, ties by id; a full
// machine is left out.
TEST(RequestShapesTest, MachinesLeastLoadedFirstSkipsFullOnes) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  for (uint64_t m = 1; m <= 4; ++m) {
    ASSERT_THAT(state.Apply(Event(Machine(m, 2, 0, 0)), 0, changes), IsOk());
  }
  cluster::JobSubmitted job{JobId(1), "j", 0, {}};
  for (uint64_t t = 1; t <= 4; ++t) job.tasks.push_back(Ask(t, 0, 0, 0));
  ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
  // Machine 1 full (2 of 2), machine 2 one task, machine 4 one task.
  ASSERT_THAT(state.Place(TaskId(1), MachineId(1), 0, changes), IsOk());
  ASSERT_THAT(state.Place(TaskId(2), MachineId(1), 0, changes), IsOk());
  ASSERT_THAT(state.Place(TaskId(3), MachineId(4), 0, changes), IsOk());
  ASSERT_THAT(state.Place(TaskId(4), MachineId(2), 0, changes), IsOk());
  std::vector<uint64_t> ids;
  for (const cluster::Machine* m : MachinesLeastLoadedFirst(state)) {
    ids.push_back(m->id.value());
  }
  EXPECT_EQ(ids, (std::vector<uint64_t>{3, 2, 4}));
}

TEST(RequestShapesTest, KeysOfPlainAsksAreTheCpuMemoryClassKeys) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  cluster::JobSubmitted job;
  job.job = JobId(1);
  job.name = "j";
  cluster::TaskSpec plain;
  plain.id = TaskId(1);
  plain.request.cpu_millis = 500;
  plain.request.memory_bytes = 1024;
  job.tasks.push_back(plain);
  job.tasks.push_back(Ask(2, 500, 0, 250));
  ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
  EXPECT_EQ(ShapeKey(*state.FindTask(TaskId(1)), state),
            "cm|cpu=500|mem=1024|req=|pref=");
  EXPECT_EQ(ShapeKey(*state.FindTask(TaskId(2)), state),
            "cm|cpu=500|mem=0|req=|pref=|acc=0x250m0b");
  const std::vector<RequestShape> shapes = WaitingShapes(state);
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].waiting, 1);
}

TEST(RequestShapesTest, DevicesBoundTheReservation) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  ASSERT_THAT(state.Apply(Event(Machine(1, 10, 0, 2)), 0, changes), IsOk());
  cluster::JobSubmitted job;
  job.job = JobId(1);
  job.name = "j";
  for (uint64_t t = 1; t <= 3; ++t) job.tasks.push_back(Ask(t, 0, 1, 0));
  for (uint64_t t = 4; t <= 8; ++t) job.tasks.push_back(Ask(t, 0, 0, 400));
  ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
  const std::vector<RequestShape> shapes = WaitingShapes(state);
  ASSERT_EQ(shapes.size(), 2u);
  const cluster::Machine& machine = state.machines().at(MachineId(1));
  for (size_t rotation = 0; rotation < 2; ++rotation) {
    std::vector<int64_t> n(shapes.size(), 0);
    ReserveMachine(machine, state, shapes, rotation,
                   [&](size_t i, int64_t count) { n[i] = count; });
    // Whole first: both devices; fractions first: both devices shared
    // (two 400s each), no whole device left.
    const bool whole_first = shapes[rotation].ask.accelerator.whole > 0;
    const size_t whole = shapes[0].ask.accelerator.whole > 0 ? 0 : 1;
    EXPECT_EQ(n[whole], whole_first ? 2 : 0) << rotation;
    EXPECT_EQ(n[1 - whole], whole_first ? 0 : 4) << rotation;
  }
}

// Whatever the machines, shapes and rotation: everything reserved fits
// the machine together, as the graph manager's fit rule books it, in
// whatever order the graph manager applies the tasks.
TEST(RequestShapesTest, ReservationsNeverOverCommitAMachine) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    cluster::ClusterState state;
    cluster::ChangeSet changes;
    const auto slots = static_cast<uint32_t>(random() % 12 + 1);
    const auto gpus = static_cast<uint32_t>(random() % 5);
    const int64_t cpu = static_cast<int64_t>(random() % 3) * 4000;
    ASSERT_THAT(state.Apply(Event(Machine(1, slots, cpu, gpus,
                                          random() % 2 ? 1000 : 700)),
                            0, changes),
                IsOk());
    cluster::JobSubmitted job;
    job.job = JobId(1);
    job.name = "j";
    const int tasks = static_cast<int>(random() % 20 + 1);
    for (int t = 1; t <= tasks; ++t) {
      const int kind = static_cast<int>(random() % 4);
      job.tasks.push_back(Ask(
          static_cast<uint64_t>(t), static_cast<int64_t>(random() % 3) * 1000,
          kind == 1 ? static_cast<uint32_t>(random() % 3 + 1) : 0,
          kind == 2 ? 100 * static_cast<int64_t>(random() % 9 + 1) : 0));
    }
    ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
    // Some tasks run already.
    for (int t = 1; t <= tasks; t += 3) {
      state.Place(TaskId(static_cast<uint64_t>(t)), MachineId(1), 0, changes)
          .IgnoreError();
    }
    const std::vector<RequestShape> shapes = WaitingShapes(state);
    const cluster::Machine& machine = state.machines().at(MachineId(1));
    std::vector<const cluster::TaskSpec*> reserved;
    ReserveMachine(machine, state, shapes, random() % 5,
                   [&](size_t i, int64_t n) {
                     EXPECT_LE(n, shapes[i].waiting);
                     for (int64_t k = 0; k < n; ++k) {
                       reserved.push_back(&shapes[i].ask);
                     }
                   });
    EXPECT_LE(reserved.size(), machine.free_slots());
    for (int order = 0; order < 4; ++order) {
      std::shuffle(reserved.begin(), reserved.end(), random);
      cluster::Machine room = machine;
      for (const cluster::TaskSpec* ask : reserved) {
        const cluster::Fit fit = cluster::FitTask(room, *ask);
        ASSERT_TRUE(fit.fits()) << "trial " << trial << ": " << fit.reason;
        cluster::BookTask(room, *ask, fit.devices);
      }
      EXPECT_TRUE(cluster::WithinCapacity(room));
    }
  }
}

// Two fraction shapes sharing two devices would fit in the order they were
// reserved (600 then 400 on each) but not in every order (best fit puts
// both 400s on one device first, and the second 600 finds no room). So
// one device shape per machine: whatever the rotation, every order fits.
TEST(RequestShapesTest, DeviceTasksFitInAnyApplyOrder) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  ASSERT_THAT(state.Apply(Event(Machine(1, 8, 0, 2)), 0, changes), IsOk());
  cluster::JobSubmitted job;
  job.job = JobId(1);
  job.name = "j";
  job.tasks = {Ask(1, 0, 0, 400), Ask(2, 0, 0, 400), Ask(3, 0, 0, 600),
               Ask(4, 0, 0, 600)};
  ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
  const std::vector<RequestShape> shapes = WaitingShapes(state);
  ASSERT_EQ(shapes.size(), 2u);
  const cluster::Machine& machine = state.machines().at(MachineId(1));
  for (size_t rotation = 0; rotation < 2; ++rotation) {
    std::vector<const cluster::TaskSpec*> reserved;
    ReserveMachine(machine, state, shapes, rotation, [&](size_t i, int64_t n) {
      for (int64_t k = 0; k < n; ++k) reserved.push_back(&shapes[i].ask);
    });
    EXPECT_FALSE(reserved.empty());
    std::sort(reserved.begin(), reserved.end());
    do {
      cluster::Machine room = machine;
      for (const cluster::TaskSpec* ask : reserved) {
        const cluster::Fit fit = cluster::FitTask(room, *ask);
        ASSERT_TRUE(fit.fits()) << "rotation " << rotation;
        cluster::BookTask(room, *ask, fit.devices);
      }
    } while (std::next_permutation(reserved.begin(), reserved.end()));
  }
}

// The reviewer's case of a fixed rotation: a machine looks past any number
// of shapes that do not fit it as long as it has reserved nothing, so a
// task that fits is always offered the machine.
TEST(RequestShapesTest, AShapeThatFitsIsFoundBehindManyThatDoNot) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  ASSERT_THAT(state.Apply(Event(Machine(1, 4, 8000, 0)), 0, changes), IsOk());
  cluster::JobSubmitted job;
  job.job = JobId(1);
  job.name = "j";
  for (uint64_t t = 1; t <= 3 * kMaxMisses; ++t) {
    job.tasks.push_back(Ask(t, 100000 + static_cast<int64_t>(t), 0, 0));
  }
  job.tasks.push_back(Ask(999, 500, 0, 0));
  ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
  const std::vector<RequestShape> shapes = WaitingShapes(state);
  ASSERT_EQ(shapes.size(), 3 * kMaxMisses + 1);
  std::vector<int64_t> n(shapes.size(), 0);
  ReserveMachine(state.machines().at(MachineId(1)), state, shapes, 0,
                 [&](size_t i, int64_t count) { n[i] = count; });
  int64_t total = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    total += n[i];
    if (n[i] > 0) {
      EXPECT_EQ(shapes[i].ask.request.cpu_millis, 500);
    }
  }
  EXPECT_EQ(total, 1);
}

// RoomLimits narrow the fit rule: a task limit counts the running tasks,
// and with network_by_use a link's spare bandwidth is measured against the
// larger of its reported use and its tasks' requests.
TEST(RequestShapesTest, RoomLimitsNarrowTheRoom) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  cluster::MachineAdded added = Machine(1, 8, 8000, 0);
  added.capacity.network_bytes_per_sec = 1000;
  ASSERT_THAT(state.Apply(Event(added), 0, changes), IsOk());
  cluster::JobSubmitted job;
  job.job = JobId(1);
  job.name = "j";
  for (uint64_t t = 1; t <= 6; ++t) {
    cluster::TaskSpec spec = Ask(t, 0, 0, 0);
    spec.request.network_bytes_per_sec = 200;
    job.tasks.push_back(spec);
  }
  ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
  ASSERT_THAT(state.Place(TaskId(1), MachineId(1), 0, changes), IsOk());
  const auto reserved = [&](RoomLimits limits) {
    int64_t total = 0;
    ReserveMachine(
        state.machines().at(MachineId(1)), state, WaitingShapes(state), 0,
        [&](size_t, int64_t n) { total += n; }, nullptr, {}, limits);
    return total;
  };
  // 800 of 1000 spare by requests: 4 more.
  EXPECT_EQ(reserved({}), 4);
  EXPECT_EQ(reserved({.max_tasks = 3}), 2);
  // Use below the requests changes nothing; above them, it is the load.
  ASSERT_THAT(
      state.Apply(Event(cluster::MachineUsage{MachineId(1), {0, 0, 100}}), 0,
                  changes),
      IsOk());
  EXPECT_EQ(reserved({.network_by_use = true}), 4);
  ASSERT_THAT(
      state.Apply(Event(cluster::MachineUsage{MachineId(1), {0, 0, 650}}), 0,
                  changes),
      IsOk());
  EXPECT_EQ(reserved({}), 4);
  EXPECT_EQ(reserved({.network_by_use = true}), 1);
  EXPECT_EQ(reserved({.max_tasks = 1, .network_by_use = true}), 0);
  // What `explain` says of the machine for one more such task: 350 of 1000
  // spare by use fits a 200 request; 900 of use leaves 100, too little.
  const cluster::Machine& machine = state.machines().at(MachineId(1));
  const cluster::TaskSpec& ask = state.FindTask(TaskId(2))->spec;
  EXPECT_EQ(LimitsRefuse(machine, ask, {.network_by_use = true}), "");
  EXPECT_EQ(LimitsRefuse(machine, ask, {.max_tasks = 1}), "task limit");
  ASSERT_THAT(
      state.Apply(Event(cluster::MachineUsage{MachineId(1), {0, 0, 900}}), 0,
                  changes),
      IsOk());
  EXPECT_EQ(LimitsRefuse(machine, ask, {}), "");
  EXPECT_EQ(LimitsRefuse(machine, ask, {.network_by_use = true}),
            "network (reported use)");
}

// Equal keys mean equal asks, whatever names the asks carry.
TEST(RequestShapesTest, NamesCannotImitateTheKeysSeparators) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  cluster::JobSubmitted job;
  job.job = JobId(1);
  job.name = "j";
  cluster::TaskSpec a = Ask(1, 0, 0, 0);
  a.request.scalars.Set("a:1;|acc=1x0m0b[q", 5);
  a.accelerator.whole = 1;
  a.accelerator.models = std::vector<std::string>{"z"};
  cluster::TaskSpec b = Ask(2, 0, 0, 0);
  b.request.scalars.Set("a", 1);
  b.accelerator.whole = 1;
  b.accelerator.models = std::vector<std::string>{"q:5;|acc=1x0m0b[z"};
  job.tasks = {a, b};
  ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
  EXPECT_NE(ShapeKey(*state.FindTask(TaskId(1)), state),
            ShapeKey(*state.FindTask(TaskId(2)), state));
}

// Preferred models make a shape of their own (they change gpu-fgd's price),
// in the order given; none keeps the key it always had.
TEST(RequestShapesTest, PreferredModelsAreInTheKey) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  cluster::JobSubmitted job;
  job.job = JobId(1);
  job.name = "j";
  for (uint64_t id = 1; id <= 3; ++id) {
    cluster::TaskSpec spec = Ask(id, 0, 0, 0);
    spec.accelerator.milli = 500;
    job.tasks.push_back(spec);
  }
  job.tasks[1].accelerator.preferred_models = {"a10"};
  job.tasks[2].accelerator.preferred_models = {"t4"};
  ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
  const auto key = [&](uint64_t id) {
    return ShapeKey(*state.FindTask(TaskId(id)), state);
  };
  EXPECT_EQ(key(1).find("|prefer["), std::string::npos);
  EXPECT_NE(key(2).find("|prefer[3#a10,]"), std::string::npos);
  EXPECT_NE(key(1), key(2));
  EXPECT_NE(key(2), key(3));
}

// Shapes whose gang members waited `after` are offered first, longest
// waiting first (a shape without one never is), each until its waiting
// tasks have room; a machine with room for one device task gives it to the
// first of them, whatever the rotation says.
TEST(RequestShapesTest, WaitingGangsAreOfferedFirst) {
  std::vector<RequestShape> shapes(4);
  shapes[0].gang_waiting_since_us = 5'000'000;
  shapes[1].gang_waiting_since_us = 1'000'000;
  shapes[2].gang_waiting_since_us = 9'000'000;
  shapes[3].waiting = 5;  // holds no gang that needs members
  EXPECT_EQ(StarvingShapes(shapes, 10'000'000, 5.0),
            (std::vector<size_t>{1, 0}));
  EXPECT_EQ(StarvingShapes(shapes, 10'000'000, 9.5), std::vector<size_t>{});
  EXPECT_EQ(StarvingShapes(shapes, 10'000'000, 0), std::vector<size_t>{});
  shapes[0].gang_missing = 3;
  shapes[1].gang_missing = 1;
  StarvingFirst pass(shapes, 10'000'000, 5.0);
  EXPECT_THAT(pass.open(), ::testing::ElementsAre(1, 0));
  pass.Reserved(1, 1);
  pass.Reserved(2, 5);  // not starving: no effect
  pass.Reserved(0, 2);
  EXPECT_THAT(pass.open(), ::testing::ElementsAre(0));
  pass.Reserved(0, 1);
  EXPECT_THAT(pass.open(), ::testing::IsEmpty());
  EXPECT_EQ(pass.Keys(shapes).size(), 2u);

  cluster::ClusterState state;
  cluster::ChangeSet changes;
  ASSERT_THAT(state.Apply(Event(Machine(1, 4, 8000, 1)), 0, changes), IsOk());
  cluster::JobSubmitted job;
  job.job = JobId(1);
  job.name = "j";
  job.tasks = {Ask(1, 0, 1, 0), Ask(2, 0, 0, 500)};
  ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
  const std::vector<RequestShape> waiting = WaitingShapes(state);
  ASSERT_EQ(waiting.size(), 2u);
  const auto reserved_for = [&](size_t rotation, std::vector<size_t> first) {
    std::vector<size_t> got;
    ReserveMachine(
        state.machines().at(MachineId(1)), state, waiting, rotation,
        [&](size_t i, int64_t) { got.push_back(i); }, nullptr, first);
    return got;
  };
  // One device: the rotation's shape gets it, unless another comes first.
  EXPECT_EQ(reserved_for(0, {}), std::vector<size_t>{0});
  EXPECT_EQ(reserved_for(1, {}), std::vector<size_t>{1});
  EXPECT_EQ(reserved_for(0, {1}), std::vector<size_t>{1});
  EXPECT_EQ(reserved_for(1, {0}), std::vector<size_t>{0});
}

// A gang of three needing two: its waiting members make its shape starve
// (two still needed) until two run; then the third is ordinary work.
TEST(RequestShapesTest, AGangWithItsMembersRunningNoLongerStarves) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  ASSERT_THAT(state.Apply(Event(Machine(1, 4, 8000, 0)), 0, changes), IsOk());
  cluster::JobSubmitted gang;
  gang.job = JobId(1);
  gang.name = "g";
  gang.min_members = 2;
  gang.tasks = {Ask(1, 100, 0, 0), Ask(2, 100, 0, 0), Ask(3, 100, 0, 0)};
  ASSERT_THAT(state.Apply(Event(gang), 0, changes), IsOk());
  ShapeIndex index;
  index.Track(changes, state);
  constexpr int64_t kLater = 10'000'000;
  std::vector<RequestShape> shapes = index.Shapes(state);
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0].gang_missing, 2);
  EXPECT_EQ(shapes[0].gang_waiting_since_us, 0);
  EXPECT_EQ(StarvingShapes(shapes, kLater, 1.0), std::vector<size_t>{0});
  EXPECT_TRUE(index.GangWaitedPast(state, kLater, 1.0));
  cluster::ChangeSet placed;
  ASSERT_THAT(state.Place(TaskId(1), MachineId(1), 1, placed), IsOk());
  ASSERT_THAT(state.Place(TaskId(2), MachineId(1), 1, placed), IsOk());
  index.Track(placed, state);
  shapes = index.Shapes(state);
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0].waiting, 1);
  EXPECT_EQ(shapes[0].gang_missing, 0);
  EXPECT_TRUE(StarvingShapes(shapes, kLater, 1.0).empty());
  EXPECT_FALSE(index.GangWaitedPast(state, kLater, 1.0));
  EXPECT_EQ(WaitingShapes(state)[0].gang_missing, 0);
}

// A different-machines job whose tasks share no model fits no device.
TEST(RequestShapesTest, ADifferentMachinesJobWithoutACommonModelWaits) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  cluster::MachineAdded machine = Machine(1, 4, 0, 0);
  for (const char* model : {"a10", "t4"}) {
    cluster::AcceleratorGroup group;
    group.count = 1;
    group.model = model;
    machine.accelerators.push_back(group);
  }
  ASSERT_THAT(state.Apply(Event(machine), 0, changes), IsOk());
  cluster::JobSubmitted job;
  job.job = JobId(1);
  job.name = "j";
  job.different_machines = true;
  cluster::TaskSpec a = Ask(1, 0, 1, 0);
  a.accelerator.models = std::vector<std::string>{"a10"};
  cluster::TaskSpec b = Ask(2, 0, 1, 0);
  b.accelerator.models = std::vector<std::string>{"t4"};
  job.tasks = {a, b};
  ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
  const std::vector<RequestShape> shapes = WaitingShapes(state);
  ASSERT_EQ(shapes.size(), 1u);
  int64_t reserved = 0;
  ReserveMachine(state.machines().at(MachineId(1)), state, shapes, 0,
                 [&](size_t, int64_t n) { reserved += n; });
  EXPECT_EQ(reserved, 0);
}

TEST(RequestShapesTest, DifferentMachinesJobsGetOnePerMachineAndCoverAll) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  ASSERT_THAT(state.Apply(Event(Machine(1, 8, 0, 4)), 0, changes), IsOk());
  ASSERT_THAT(state.Apply(Event(Machine(2, 8, 0, 4)), 0, changes), IsOk());
  cluster::JobSubmitted job;
  job.job = JobId(1);
  job.name = "j";
  job.different_machines = true;
  job.tasks.push_back(Ask(1, 100, 0, 300));
  job.tasks.push_back(Ask(2, 300, 2, 0));
  job.tasks.push_back(Ask(3, 200, 0, 0));
  ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
  ASSERT_THAT(state.Place(TaskId(3), MachineId(1), 0, changes), IsOk());
  const std::vector<RequestShape> shapes = WaitingShapes(state);
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0].waiting, 2);
  EXPECT_EQ(shapes[0].ask.request.cpu_millis, 300);
  EXPECT_EQ(shapes[0].ask.accelerator.whole, 2u);  // covers the fraction
  EXPECT_EQ(shapes[0].ask.accelerator.milli, 0);
  int64_t on1 = 0, on2 = 0;
  ReserveMachine(state.machines().at(MachineId(1)), state, shapes, 0,
                 [&](size_t, int64_t n) { on1 = n; });
  ReserveMachine(state.machines().at(MachineId(2)), state, shapes, 0,
                 [&](size_t, int64_t n) { on2 = n; });
  EXPECT_EQ(on1, 0);  // the job runs there
  EXPECT_EQ(on2, 1);
}

// Whole devices cover a fraction only on devices that hold it: on
// devices of 500 milli a whole device fits the job's covering ask but not
// its 700-milli task, so that machine is offered nothing; on whole-unit
// devices both fit.
TEST(RequestShapesTest,
     ADifferentMachinesCoverOfWholeAndFractionChecksTheFraction) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  ASSERT_THAT(
      state.Apply(Event(Machine(1, 8, 0, 4, /*gpu_milli=*/500)), 0, changes),
      IsOk());
  ASSERT_THAT(state.Apply(Event(Machine(2, 8, 0, 4)), 0, changes), IsOk());
  cluster::JobSubmitted job;
  job.job = JobId(1);
  job.name = "j";
  job.different_machines = true;
  job.tasks.push_back(Ask(1, 0, 1, 0));
  job.tasks.push_back(Ask(2, 0, 0, 700));
  ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
  const std::vector<RequestShape> shapes = WaitingShapes(state);
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0].covered_fractions.size(), 1u);
  int64_t on1 = 0, on2 = 0;
  ReserveMachine(state.machines().at(MachineId(1)), state, shapes, 0,
                 [&](size_t, int64_t n) { on1 = n; });
  ReserveMachine(state.machines().at(MachineId(2)), state, shapes, 0,
                 [&](size_t, int64_t n) { on2 = n; });
  EXPECT_EQ(on1, 0);
  EXPECT_EQ(on2, 1);
}

TEST(RequestShapesTest, RequiredLabelsFilterMachines) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  cluster::MachineAdded labelled = Machine(1, 4, 0, 0);
  labelled.labels["zone"] = "a";
  ASSERT_THAT(state.Apply(Event(labelled), 0, changes), IsOk());
  ASSERT_THAT(state.Apply(Event(Machine(2, 4, 0, 0)), 0, changes), IsOk());
  cluster::JobSubmitted job;
  job.job = JobId(1);
  job.name = "j";
  cluster::TaskSpec spec = Ask(1, 0, 0, 0);
  spec.required_labels["zone"] = "a";
  job.tasks.push_back(spec);
  ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
  const std::vector<RequestShape> shapes = WaitingShapes(state);
  int64_t on1 = 0, on2 = 0;
  ReserveMachine(state.machines().at(MachineId(1)), state, shapes, 0,
                 [&](size_t, int64_t n) { on1 = n; });
  ReserveMachine(state.machines().at(MachineId(2)), state, shapes, 0,
                 [&](size_t, int64_t n) { on2 = n; });
  EXPECT_EQ(on1, 1);
  EXPECT_EQ(on2, 0);
}

// Kept task by task, the index always gives what a scan of every task
// gives: same keys, asks and waiting counts.
TEST(RequestShapesTest, ShapeIndexMatchesAFullScan) {
  std::mt19937_64 random(11);
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  for (uint64_t m = 1; m <= 3; ++m) {
    ASSERT_THAT(state.Apply(Event(Machine(m, 6, 8000, 2)), 0, changes), IsOk());
  }
  ShapeIndex index;
  uint64_t next_task = 1;
  for (uint64_t step = 1; step <= 60; ++step) {
    const auto now = static_cast<int64_t>(step) * 1000;
    cluster::ChangeSet touched;
    const int what = static_cast<int>(random() % 3);
    if (what == 0 || state.tasks().empty()) {
      cluster::JobSubmitted job;
      job.job = JobId(step);
      job.name = "j";
      job.different_machines = random() % 4 == 0;
      job.min_members = random() % 3 == 0 ? 2 : 0;
      for (int t = 0; t < 3; ++t) {
        job.tasks.push_back(
            Ask(next_task++, static_cast<int64_t>(random() % 3) * 500,
                random() % 3 == 0 ? 1 : 0, random() % 3 == 1 ? 250 : 0));
      }
      ASSERT_THAT(state.Apply(Event(job), now, touched), IsOk());
    } else {
      auto it = state.tasks().begin();
      std::advance(it, static_cast<ptrdiff_t>(random() % state.tasks().size()));
      const TaskId id = it->first;
      if (what == 1 && !it->second.running()) {
        state.Place(id, MachineId(random() % 3 + 1), now, touched)
            .IgnoreError();
      } else if (what == 1) {
        // A running task fails: it waits again, its earlier wait kept.
        ASSERT_THAT(state.Apply(Event(cluster::TaskFailed{it->second.job, id}),
                                now, touched),
                    IsOk());
      } else {
        ASSERT_THAT(
            state.Apply(Event(cluster::TaskFinished{it->second.job, id}), now,
                        touched),
            IsOk());
      }
    }
    for (TaskId id : touched.tasks) {
      const cluster::Task* task = state.FindTask(id);
      index.Update(id, task, task != nullptr && !task->running(), state);
    }
    const std::vector<RequestShape> kept = index.Shapes(state);
    const std::vector<RequestShape> scanned = WaitingShapes(state);
    for (const double after_s : {0.005, 0.02}) {
      EXPECT_EQ(index.GangWaitedPast(state, now, after_s),
                !StarvingShapes(kept, now, after_s).empty());
    }
    ASSERT_EQ(kept.size(), scanned.size()) << "step " << step;
    for (size_t i = 0; i < kept.size(); ++i) {
      EXPECT_EQ(kept[i].key, scanned[i].key);
      EXPECT_EQ(kept[i].waiting, scanned[i].waiting) << kept[i].key;
      EXPECT_EQ(kept[i].ask.request, scanned[i].ask.request) << kept[i].key;
      EXPECT_EQ(kept[i].ask.accelerator, scanned[i].ask.accelerator);
      EXPECT_EQ(kept[i].gang_missing, scanned[i].gang_missing) << kept[i].key;
      EXPECT_EQ(kept[i].gang_waiting_since_us, scanned[i].gang_waiting_since_us)
          << kept[i].key;
    }
  }
}

// The capped walk counts a held machine whose pool arc stays open toward
// the share of every shape the pool takes: with only such shapes waiting
// it ends after their share of held machines, reserving nothing; beside a
// shape the pool does not take it still gives that shape its share.
TEST(RequestShapesTest, TheCappedWalkCountsHeldMachinesTowardPooledShapes) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  for (uint64_t m = 1; m <= 40; ++m) {
    ASSERT_THAT(state.Apply(Event(Machine(m, 4, 8000, 0)), 0, changes), IsOk());
  }
  cluster::JobSubmitted job;
  job.job = JobId(1);
  job.name = "j";
  job.tasks = {Ask(1, 1000, 0, 0), Ask(2, 1000, 0, 0)};
  ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
  const MachineCap cap{.per_task = 2, .min_machines = 1};
  const auto walk = [&](const std::function<bool(uint64_t)>& held,
                        const std::function<bool(int64_t)>& taken,
                        std::vector<int64_t>& machines_of, int& visited) {
    const std::vector<RequestShape> shapes = WaitingShapes(state);
    PooledMachines pooled;
    pooled.holds = [&](const cluster::Machine& machine) {
      ++visited;
      return held(machine.id.value());
    };
    for (const RequestShape& shape : shapes) {
      pooled.takes.push_back(taken(shape.ask.request.cpu_millis));
    }
    machines_of.assign(shapes.size(), 0);
    visited = 0;
    StarvingFirst starving(shapes, 0, 0);
    ReserveLeastLoaded(
        state, shapes, cap, /*fullest_first=*/false, {}, starving,
        [&](const cluster::Machine&, size_t i, int64_t) { ++machines_of[i]; },
        &pooled);
    return shapes;
  };
  std::vector<int64_t> machines_of;
  int visited = 0;
  // Every machine held, the one shape taken: 2 x 2 held machines, nothing
  // reserved.
  walk([](uint64_t) { return true; }, [](int64_t) { return true; }, machines_of,
       visited);
  EXPECT_EQ(machines_of, std::vector<int64_t>{0});
  EXPECT_EQ(visited, 4);

  // Odd machines held; a shape of 3,000 millis the pool does not take
  // wants 2 machines and gets them; the walk ends well before the 40th.
  job.job = JobId(2);
  job.tasks = {Ask(3, 3000, 0, 0)};
  ASSERT_THAT(state.Apply(Event(job), 0, changes), IsOk());
  const std::vector<RequestShape> shapes =
      walk([](uint64_t id) { return id % 2 == 1; },
           [](int64_t cpu) { return cpu == 1000; }, machines_of, visited);
  ASSERT_EQ(shapes.size(), 2u);
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (shapes[i].ask.request.cpu_millis == 3000) {
      EXPECT_EQ(machines_of[i], 2);
    } else {
      // Reached through the pool on the held machines passed over, and
      // by reservation on the others: never more than its share.
      EXPECT_GE(machines_of[i], 1);
      EXPECT_LE(machines_of[i], 4);
    }
  }
  EXPECT_LE(visited, 8);
}

}  // namespace
}  // namespace flowsched::flow
