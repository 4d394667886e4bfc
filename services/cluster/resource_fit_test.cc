#include "services/cluster/resource_fit.h"

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/byte_units.h"

namespace flowsched::cluster {
namespace {

using ::testing::ElementsAre;

Machine MakeMachine(Resources capacity, uint32_t slots,
                    std::vector<AcceleratorGroup> groups = {}) {
  Machine machine;
  machine.id = MachineId(1);
  machine.capacity = std::move(capacity);
  machine.task_slots = slots;
  machine.devices = ExpandAccelerators(groups);
  return machine;
}

TaskSpec Ask(uint64_t id, Resources request = {},
             AcceleratorRequest accelerator = {}) {
  TaskSpec spec;
  spec.id = TaskId(id);
  spec.request = std::move(request);
  spec.accelerator = std::move(accelerator);
  return spec;
}

AcceleratorRequest Whole(uint32_t n,
                         std::optional<std::vector<std::string>> models = {}) {
  return AcceleratorRequest{.whole = n, .models = std::move(models)};
}
AcceleratorRequest Fraction(int64_t milli, int64_t memory_bytes = 0) {
  return AcceleratorRequest{.milli = milli, .memory_bytes = memory_bytes};
}

// Places `spec` as ClusterState::Place does; the fit must succeed.
std::vector<DeviceShare> Place(Machine& machine, const TaskSpec& spec) {
  Fit fit = FitTask(machine, spec);
  EXPECT_TRUE(fit.fits()) << fit.reason;
  machine.running.insert(spec.id);
  BookTask(machine, spec, fit.devices);
  return fit.devices;
}

TEST(FitTaskTest, UnreportedCpuAndMemoryAreBoundedBySlotsOnly) {
  Machine machine = MakeMachine({}, 1);
  const TaskSpec big = Ask(1, {.cpu_millis = 1 << 30,
                               .memory_bytes = 1 << 30,
                               .network_bytes_per_sec = 1 << 30});
  EXPECT_TRUE(FitTask(machine, big).fits());
  Place(machine, big);
  EXPECT_EQ(FitTask(machine, Ask(2)).reason, "slots");
}

TEST(FitTaskTest, ReasonsNameTheFirstDimensionThatDoesNotFit) {
  Machine machine = MakeMachine({.cpu_millis = 1000,
                                 .memory_bytes = 1000,
                                 .network_bytes_per_sec = 100,
                                 .scalars = {{"ephemeral-storage", 50}}},
                                4);
  EXPECT_EQ(FitTask(machine, Ask(1, {.cpu_millis = 1001})).reason, "cpu");
  EXPECT_EQ(FitTask(machine, Ask(1, {.memory_bytes = 1001})).reason, "memory");
  EXPECT_EQ(FitTask(machine, Ask(1, {.network_bytes_per_sec = 101})).reason,
            "network");
  EXPECT_EQ(
      FitTask(machine, Ask(1, {.scalars = {{"ephemeral-storage", 51}}})).reason,
      "ephemeral-storage");
  // A scalar the machine lacks has capacity 0.
  EXPECT_EQ(
      FitTask(machine, Ask(1, {.scalars = {{"example.com/fpga", 1}}})).reason,
      "example.com/fpga");
  EXPECT_EQ(FitTask(machine, Ask(1, {}, Whole(1))).reason, "no device");
  EXPECT_TRUE(FitTask(machine, Ask(1, {.cpu_millis = 1000,
                                       .memory_bytes = 1000,
                                       .network_bytes_per_sec = 100,
                                       .scalars = {{"ephemeral-storage", 50}}}))
                  .fits());
}

TEST(FitTaskTest, ScalarsAddUpAcrossTasksAndReleaseExactly) {
  Machine machine = MakeMachine({.scalars = {{"fpga", 3}}}, 10);
  const Machine empty = machine;
  const TaskSpec two = Ask(1, {.scalars = {{"fpga", 2}}});
  const TaskSpec one = Ask(2, {.scalars = {{"fpga", 1}}});
  Place(machine, two);
  EXPECT_EQ(FitTask(machine, two).reason, "fpga");
  Place(machine, one);
  EXPECT_EQ(FitTask(machine, one).reason, "fpga");
  EXPECT_TRUE(WithinCapacity(machine));
  UnbookTask(machine, one, {});
  UnbookTask(machine, two, {});
  machine.running.clear();
  // Allocations that return to 0 leave no entry behind.
  EXPECT_EQ(machine.allocated, empty.allocated);
  EXPECT_TRUE(machine.allocated.scalars.empty());
}

TEST(FitTaskTest, WholeDevicesAreTheLowestFreeOnesOfAnAcceptableModel) {
  Machine machine =
      MakeMachine({}, 10,
                  {{.count = 2, .model = "t4"},
                   {.count = 3, .model = "a10"},
                   {.count = 1, .model = "a10", .milli_per_device = 500}});
  const Fit any = FitTask(machine, Ask(1, {}, Whole(2)));
  ASSERT_TRUE(any.fits());
  EXPECT_THAT(any.devices,
              ElementsAre(DeviceShare{0, 1000}, DeviceShare{1, 1000}));
  const TaskSpec a10 = Ask(2, {}, Whole(2, std::vector<std::string>{"a10"}));
  EXPECT_THAT(Place(machine, a10),
              ElementsAre(DeviceShare{2, 1000}, DeviceShare{3, 1000}));
  // The next two a10 devices: 4, and 5 (a half-capacity device, taken whole).
  EXPECT_THAT(
      Place(machine, Ask(3, {}, Whole(2, std::vector<std::string>{"a10"}))),
      ElementsAre(DeviceShare{4, 1000}, DeviceShare{5, 500}));
  EXPECT_EQ(
      FitTask(machine, Ask(4, {}, Whole(1, std::vector<std::string>{"a10"})))
          .reason,
      "no free a10 device");
  EXPECT_EQ(
      FitTask(machine,
              Ask(4, {}, Whole(1, std::vector<std::string>{"h100", "a100"})))
          .reason,
      "no h100|a100 device");
  // Too few devices of the model on the machine at all.
  EXPECT_EQ(
      FitTask(machine, Ask(4, {}, Whole(3, std::vector<std::string>{"t4"})))
          .reason,
      "no t4 device");
  EXPECT_TRUE(WithinCapacity(machine));
}

TEST(FitTaskTest, WholeDevicesAreExclusive) {
  Machine machine = MakeMachine({}, 10, {{.count = 2, .model = "a10"}});
  Place(machine, Ask(1, {}, Fraction(1)));  // a sliver of device 0
  // Device 0 is in use, so a whole device is device 1, and then none.
  EXPECT_THAT(Place(machine, Ask(2, {}, Whole(1))),
              ElementsAre(DeviceShare{1, 1000}));
  EXPECT_EQ(FitTask(machine, Ask(3, {}, Whole(1))).reason, "no free device");
  // No fraction fits on a device held whole.
  Place(machine, Ask(4, {}, Fraction(999)));  // fills device 0 exactly
  EXPECT_EQ(FitTask(machine, Ask(5, {}, Fraction(1))).reason, "no free device");
  EXPECT_EQ(machine.devices[0].used_milli, 1000);
  EXPECT_THAT(machine.devices[1].tasks, ElementsAre(TaskId(2)));
  EXPECT_TRUE(WithinCapacity(machine));
}

TEST(FitTaskTest, FractionsGoToTheFullestDeviceThatHoldsThem) {
  Machine machine = MakeMachine({}, 10, {{.count = 4, .model = "a10"}});
  // All free: ties go to the lowest index.
  EXPECT_THAT(Place(machine, Ask(1, {}, Fraction(600))),
              ElementsAre(DeviceShare{0, 600}));
  EXPECT_THAT(Place(machine, Ask(2, {}, Fraction(300))),
              ElementsAre(DeviceShare{0, 300}));  // 400 free on 0: best fit
  EXPECT_THAT(Place(machine, Ask(3, {}, Fraction(200))),
              ElementsAre(DeviceShare{1, 200}));  // 100 left on 0
  EXPECT_THAT(Place(machine, Ask(4, {}, Fraction(100))),
              ElementsAre(DeviceShare{0, 100}));  // exactly fills device 0
  EXPECT_THAT(Place(machine, Ask(5, {}, Fraction(500))),
              ElementsAre(DeviceShare{1, 500}));  // 800 free on 1 beats 1000
  EXPECT_EQ(machine.devices[0].used_milli, 1000);
  EXPECT_EQ(machine.devices[1].used_milli, 700);
  EXPECT_THAT(machine.devices[0].tasks,
              ElementsAre(TaskId(1), TaskId(2), TaskId(4)));
  EXPECT_TRUE(WithinCapacity(machine));
}

// Devices of a preferred model come first (by the same rule among them);
// the others serve what the preferred ones cannot.
TEST(FitTaskTest, PreferredModelsAreChosenFirst) {
  Machine machine = MakeMachine(
      {}, 10, {{.count = 2, .model = "t4"}, {.count = 2, .model = "a10"}});
  AcceleratorRequest prefer_a10 = Whole(1);
  prefer_a10.preferred_models = {"a10"};
  EXPECT_THAT(Place(machine, Ask(1, {}, prefer_a10)),
              ElementsAre(DeviceShare{2, 1000}));
  // Three devices: the free a10 (3), then both t4s (0, 1); index order.
  AcceleratorRequest three = Whole(3);
  three.preferred_models = {"a10"};
  EXPECT_THAT(FitTask(machine, Ask(2, {}, three)).devices,
              ElementsAre(DeviceShare{0, 1000}, DeviceShare{1, 1000},
                          DeviceShare{3, 1000}));
  // A fraction: the a10 with room, although the t4s are fuller.
  Place(machine, Ask(3, {}, Fraction(800)));  // device 0 (fullest, lowest)
  AcceleratorRequest slice = Fraction(100);
  slice.preferred_models = {"a10"};
  EXPECT_THAT(Place(machine, Ask(4, {}, slice)),
              ElementsAre(DeviceShare{3, 100}));
  // No a10 left with room for 950: a t4 serves it.
  Place(machine, Ask(5, {}, Fraction(900)));  // device 3 now holds 1000
  AcceleratorRequest big_slice = Fraction(950);
  big_slice.preferred_models = {"a10"};
  EXPECT_THAT(Place(machine, Ask(6, {}, big_slice)),
              ElementsAre(DeviceShare{1, 950}));
  EXPECT_TRUE(WithinCapacity(machine));
}

TEST(FitTaskTest, DeviceMemoryBoundsWholeDevicesAndFractions) {
  Machine machine =
      MakeMachine({}, 10,
                  {{.count = 1, .model = "t4", .memory_bytes = 16 * kGiB},
                   {.count = 1, .model = "a100", .memory_bytes = 80 * kGiB},
                   {.count = 1, .model = "fpga"}});  // reports no memory
  AcceleratorRequest big = Whole(1, std::vector<std::string>{"t4"});
  big.memory_bytes = 40 * kGiB;
  EXPECT_EQ(FitTask(machine, Ask(1, {}, big)).reason, "t4 device memory");
  big.models = std::vector<std::string>{"t4", "a100"};
  EXPECT_THAT(FitTask(machine, Ask(1, {}, big)).devices,
              ElementsAre(DeviceShare{1, 1000}));
  // Fractions share a device's memory as well as its milli-units.
  AcceleratorRequest slice = Fraction(100, 10 * kGiB);
  slice.models = std::vector<std::string>{"t4"};
  Place(machine, Ask(2, {}, slice));
  EXPECT_EQ(machine.devices[0].used_memory_bytes, 10 * kGiB);
  EXPECT_EQ(FitTask(machine, Ask(3, {}, slice)).reason, "no free t4 device");
  // A device that reports no memory is bounded by milli-units only.
  AcceleratorRequest fpga = Fraction(500, 1000 * kGiB);
  fpga.models = std::vector<std::string>{"fpga"};
  EXPECT_THAT(Place(machine, Ask(4, {}, fpga)),
              ElementsAre(DeviceShare{2, 500}));
  EXPECT_TRUE(WithinCapacity(machine));
}

TEST(FitTaskTest, WithinCapacityCatchesEveryOverCommit) {
  Machine machine =
      MakeMachine({.cpu_millis = 10, .scalars = {{"x", 1}}}, 1, {{.count = 1}});
  EXPECT_TRUE(WithinCapacity(machine));
  Machine over = machine;
  over.allocated.cpu_millis = 11;
  EXPECT_FALSE(WithinCapacity(over));
  over = machine;
  over.allocated.scalars.Set("x", 2);
  EXPECT_FALSE(WithinCapacity(over));
  over = machine;
  over.allocated.scalars.Set("y", 1);
  EXPECT_FALSE(WithinCapacity(over));
  over = machine;
  over.devices[0].used_milli = 1001;
  EXPECT_FALSE(WithinCapacity(over));
  over = machine;
  over.running = {TaskId(1), TaskId(2)};
  EXPECT_FALSE(WithinCapacity(over));
}

// Whether some choice of devices serves `ask` on `machine` (brute force
// over what is free), to check that FitTask never misses one.
bool SomeDeviceChoiceFits(const Machine& machine,
                          const AcceleratorRequest& ask) {
  uint32_t free_whole = 0;
  for (const Device& d : machine.devices) {
    if (!ask.AcceptsModel(d.model)) continue;
    const bool memory_ok =
        d.memory_bytes == 0 || ask.memory_bytes <= d.memory_bytes;
    if (ask.milli == 0) {
      if (memory_ok && d.used_milli == 0 && d.tasks.empty()) ++free_whole;
    } else if (d.free_milli() >= ask.milli &&
               (d.memory_bytes == 0 ||
                d.used_memory_bytes + ask.memory_bytes <= d.memory_bytes)) {
      return true;
    }
  }
  return ask.milli == 0 && free_whole >= ask.whole;
}

// Random machines and asks, placed and released in random order: nothing
// is ever over-committed, whole devices have one holder, fractions on a
// device sum to at most its capacity, a fit never misses a possible choice,
// the choice is deterministic, and releasing everything restores the
// machine exactly.
TEST(FitTaskTest, RandomPlacementsNeverOverCommitAndReleaseExactly) {
  const std::vector<std::string> models = {"t4", "a10", "a100"};
  int placed_whole = 0;
  int placed_fraction = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    const auto uniform = [&](int64_t lo, int64_t hi) {
      return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
    };
    std::vector<AcceleratorGroup> groups;
    for (int64_t g = uniform(0, 3); g > 0; --g) {
      groups.push_back(
          {.count = static_cast<uint32_t>(uniform(1, 4)),
           .model = models[static_cast<size_t>(uniform(0, 2))],
           .milli_per_device = uniform(0, 1) == 0 ? 1000 : uniform(1, 1000),
           .memory_bytes = uniform(0, 2) * 8});
    }
    Machine machine = MakeMachine(
        {.cpu_millis = uniform(0, 1) * 8000, .scalars = {{"fpga", 4}}},
        static_cast<uint32_t>(uniform(1, 30)), groups);
    const Machine empty = machine;
    std::map<TaskId, std::pair<TaskSpec, std::vector<DeviceShare>>> placed;
    for (uint64_t id = 1; id <= 200; ++id) {
      if (!placed.empty() && uniform(0, 3) == 0) {
        auto it = placed.begin();
        std::advance(it, uniform(0, static_cast<int64_t>(placed.size()) - 1));
        machine.running.erase(it->first);
        UnbookTask(machine, it->second.first, it->second.second);
        placed.erase(it);
      }
      AcceleratorRequest ask;
      switch (uniform(0, 3)) {
        case 0:
          break;  // no accelerator
        case 1:
          ask.whole = static_cast<uint32_t>(uniform(1, 3));
          break;
        default:
          ask.milli = uniform(1, 999);
          break;
      }
      if (!ask.empty() && uniform(0, 1) == 0) {
        ask.models = std::vector<std::string>{
            models[static_cast<size_t>(uniform(0, 2))]};
      }
      if (!ask.empty()) ask.memory_bytes = uniform(0, 2) * 4;
      const TaskSpec spec = Ask(id,
                                {.cpu_millis = uniform(0, 2000),
                                 .scalars = {{"fpga", uniform(0, 2)}}},
                                ask);
      const Fit fit = FitTask(machine, spec);
      const Fit again = FitTask(Machine(machine), spec);
      ASSERT_EQ(fit.reason, again.reason);
      ASSERT_EQ(fit.devices, again.devices);
      if (!fit.fits()) {
        if (fit.reason.find("device") != std::string::npos) {
          ASSERT_FALSE(SomeDeviceChoiceFits(machine, ask))
              << "seed " << seed << " task " << id << ": " << fit.reason;
        }
        continue;
      }
      ASSERT_EQ(fit.devices.size(), ask.device_count());
      machine.running.insert(spec.id);
      BookTask(machine, spec, fit.devices);
      placed[spec.id] = {spec, fit.devices};
      placed_whole += ask.whole > 0 ? 1 : 0;
      placed_fraction += ask.milli > 0 ? 1 : 0;
      ASSERT_TRUE(WithinCapacity(machine)) << "seed " << seed;
      for (const auto& [task, entry] : placed) {
        if (entry.first.accelerator.whole == 0) continue;
        for (const DeviceShare& share : entry.second) {
          ASSERT_EQ(machine.devices[share.index].tasks.size(), 1u)
              << "seed " << seed << ": a whole device is shared";
        }
      }
    }
    for (const auto& [task, entry] : placed) {
      machine.running.erase(task);
      UnbookTask(machine, entry.first, entry.second);
    }
    EXPECT_EQ(machine.allocated, empty.allocated) << "seed " << seed;
    EXPECT_EQ(machine.devices, empty.devices) << "seed " << seed;
  }
  // The seeds exercise both kinds of ask, not just the failures.
  EXPECT_GT(placed_whole, 100);
  EXPECT_GT(placed_fraction, 100);
}

}  // namespace
}  // namespace flowsched::cluster

namespace flowsched::cluster {
namespace {

// The counting form is FitTask applied one task after another.
TEST(ResourceFitCountTest, EqualsPlacingOneByOne) {
  std::mt19937_64 random(3);
  for (int trial = 0; trial < 300; ++trial) {
    Resources capacity{static_cast<int64_t>(random() % 3) * 4000,
                       static_cast<int64_t>(random() % 3) * 8192,
                       static_cast<int64_t>(random() % 2) * 1000};
    if (random() % 2) capacity.scalars.Set("fpga", random() % 5);
    Machine machine = MakeMachine(capacity, 1000);
    Resources request{static_cast<int64_t>(random() % 4) * 700,
                      static_cast<int64_t>(random() % 4) * 1500,
                      static_cast<int64_t>(random() % 3) * 300};
    if (random() % 3 == 0) request.scalars.Set("fpga", random() % 3 + 1);
    const int64_t limit = static_cast<int64_t>(random() % 20);
    const int64_t counted = ResourceFitCount(machine, request, limit);
    int64_t placed = 0;
    while (placed < limit && FitTask(machine, Ask(1, request)).fits()) {
      BookTask(machine, Ask(1, request), {});
      ++placed;
    }
    EXPECT_EQ(counted, placed) << "trial " << trial;
  }
}

TEST(ResourceFitCountTest, HugeStoredValuesDoNotOverflow) {
  Machine machine =
      MakeMachine({INT64_MAX, INT64_MAX, 0, {{"fpga", INT64_MAX}}}, 4);
  machine.allocated = {INT64_MAX - 1, 0, 0, {{"fpga", INT64_MAX - 1}}};
  const Resources request{2, INT64_MAX, 0, {{"fpga", 2}}};
  EXPECT_EQ(FitTask(machine, Ask(1, request)).reason, "cpu");
  EXPECT_EQ(ResourceFitCount(machine, request, 10), 0);
  EXPECT_EQ(ResourceFitCount(machine, {0, INT64_MAX, 0, {}}, 10), 1);
}

TEST(FitTaskOnDevicesTest, ChosenDevicesAreCheckedByTheSameRule) {
  Machine machine = MakeMachine({}, 4, {{.count = 2, .model = "a"}});
  Place(machine, Ask(1, {}, Fraction(300)));  // device 0: 300 used
  const TaskSpec fraction = Ask(2, {}, Fraction(400));
  EXPECT_EQ(FitTaskOnDevices(machine, fraction, {}).devices,
            FitTask(machine, fraction).devices);
  const std::vector<DeviceShare> on_one{{1, 400}};
  EXPECT_THAT(FitTaskOnDevices(machine, fraction, on_one).devices,
              ElementsAre(DeviceShare{1, 400}));
  EXPECT_EQ(
      FitTaskOnDevices(machine, fraction, std::vector<DeviceShare>{{1, 300}})
          .reason,
      "device choice");
  EXPECT_EQ(
      FitTaskOnDevices(machine, fraction, std::vector<DeviceShare>{{2, 400}})
          .reason,
      "device choice");
  const TaskSpec big = Ask(3, {}, Fraction(800));
  EXPECT_EQ(
      FitTaskOnDevices(machine, big, std::vector<DeviceShare>{{0, 800}}).reason,
      "no free device");
  const TaskSpec whole = Ask(4, {}, Whole(1));
  EXPECT_EQ(
      FitTaskOnDevices(machine, whole, std::vector<DeviceShare>{{0, 1000}})
          .reason,
      "no free device");
  EXPECT_TRUE(
      FitTaskOnDevices(machine, whole, std::vector<DeviceShare>{{1, 1000}})
          .fits());
  const TaskSpec two = Ask(5, {}, Whole(2, std::vector<std::string>{"a"}));
  EXPECT_EQ(FitTaskOnDevices(machine, two,
                             std::vector<DeviceShare>{{1, 1000}, {1, 1000}})
                .reason,
            "device choice");
  EXPECT_EQ(FitTaskOnDevices(machine, Ask(6), on_one).reason, "device choice");
}

}  // namespace
}  // namespace flowsched::cluster
