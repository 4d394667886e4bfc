#include "tools/sim/locality_floor.h"

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tools/sim/simulator.h"
#include "tools/sim/synthetic.h"

namespace flowsched::sim {
namespace {

constexpr int64_t kBlockBytes = int64_t{256} << 20;

SimMachine Machine(uint64_t id, std::string rack) {
  return SimMachine{.id = id, .rack = std::move(rack)};
}

SimTask Task(uint64_t id, std::vector<cluster::DataLocality> input,
             int64_t input_bytes = 0) {
  int64_t sum = 0;
  for (const auto& e : input) sum += e.bytes;
  return SimTask{.task_id = id,
                 .job_id = 1,
                 .input = std::move(input),
                 .input_bytes = std::max(input_bytes, sum)};
}

cluster::DataLocality On(uint64_t machine, int64_t blocks) {
  return {.machine = MachineId(machine), .bytes = blocks * kBlockBytes};
}

// The floor of `w` with one slot per machine, in blocks.
void ExpectFloor(const Workload& w, uint64_t tasks, uint64_t placed,
                 int64_t input_blocks, int64_t cross_blocks) {
  auto floor = ComputeLocalityFloor(w, 1);
  ASSERT_TRUE(floor.ok()) << floor.status();
  EXPECT_EQ(floor->tasks, tasks);
  EXPECT_EQ(floor->placed, placed);
  EXPECT_EQ(floor->input_bytes, input_blocks * kBlockBytes);
  EXPECT_EQ(floor->cross_rack_bytes, cross_blocks * kBlockBytes);
  EXPECT_DOUBLE_EQ(floor->cross_rack_share(),
                   static_cast<double>(cross_blocks) / input_blocks);
}

// Two racks of one one-slot machine; both tasks prefer rack a, which holds
// only one of them: the one with more input in a stays, the other moves.
TEST(LocalityFloorTest, KeepsTheHeavierInputHomeWhenTheRackIsFull) {
  Workload w;
  w.machines = {Machine(1, "a"), Machine(2, "b")};
  w.tasks = {Task(1, {On(1, 3)}), Task(2, {On(1, 1), On(2, 1)})};
  // Task 1 in a (0 across), task 2 in b (its block on machine 1 across).
  ExpectFloor(w, 2, 2, 5, 1);
}

// Rack-level entries, bytes no entry places, machines absent at time 0 and
// tasks arriving later are all handled as the simulator's measure does.
TEST(LocalityFloorTest, CountsOnlyWhatARackCanHoldAtTimeZero) {
  Workload w;
  w.machines = {Machine(1, "a"), Machine(2, "b"), Machine(3, "c")};
  w.machines[2].add_us = 5;  // not there at time 0: its blocks are remote
  w.tasks = {
      Task(1, {cluster::DataLocality{.rack = "b", .bytes = 2 * kBlockBytes}},
           3 * kBlockBytes),  // 1 block nowhere: at best 1 across
      Task(2, {On(3, 4)}),    // only on the absent machine: 4 across
  };
  SimTask later = Task(3, {On(1, 5)});
  later.submit_us = 10;
  w.tasks.push_back(later);
  ExpectFloor(w, 2, 2, 7, 5);
}

// Sizes that are no multiple of a MiB are priced exactly (in their common
// divisor): rounded to MiB both choices cost the same and the worse tie
// was reported as the floor.
TEST(LocalityFloorTest, PricesSizesExactly) {
  Workload w;
  w.machines = {Machine(1, "a"), Machine(2, "b")};
  auto bytes_on = [](uint64_t machine, int64_t bytes) {
    return cluster::DataLocality{.machine = MachineId(machine), .bytes = bytes};
  };
  w.tasks = {Task(1, {bytes_on(1, 900'000), bytes_on(2, 100'000)}),
             Task(2, {bytes_on(1, 100'000), bytes_on(2, 900'000)})};
  auto floor = ComputeLocalityFloor(w, 1);
  ASSERT_TRUE(floor.ok()) << floor.status();
  EXPECT_TRUE(floor->exact);
  EXPECT_EQ(floor->input_bytes, 2'000'000);
  EXPECT_EQ(floor->cross_rack_bytes, 200'000);
}

// At a speed-up, "present at time 0" is what the simulator rounds to 0.
TEST(LocalityFloorTest, TimeZeroIsTheSimulatorsAtTheSpeedUp) {
  Workload w;
  w.machines = {Machine(1, "a"), Machine(2, "b")};
  w.machines[1].add_us = 100;  // 0 at 300x: present
  w.tasks = {Task(1, {On(2, 2)}), Task(2, {On(1, 1)})};
  w.tasks[1].submit_us = 100;  // 0 at 300x
  ExpectFloor(w, 1, 1, 2, 2);  // at 1x: machine 2 and task 2 come later
  auto fast = ComputeLocalityFloor(w, 1, 300);
  ASSERT_TRUE(fast.ok()) << fast.status();
  EXPECT_EQ(fast->tasks, 2u);
  EXPECT_EQ(fast->placed, 2u);
  EXPECT_EQ(fast->cross_rack_bytes, 0);
}

TEST(LocalityFloorTest, RejectsAnInputTooLargeToPriceAndABadSpeedUp) {
  Workload w;
  w.machines = {Machine(1, "a")};
  w.tasks = {Task(1, {On(1, 1)}, int64_t{1} << 52)};
  EXPECT_EQ(ComputeLocalityFloor(w, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  w.tasks = {Task(1, {On(1, 1)})};
  EXPECT_EQ(ComputeLocalityFloor(w, 1, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Sizes whose common divisor leaves costs above the solvers' arc-cost
// limit (2^30) are priced in a coarser unit: a lower bound, not an error.
TEST(LocalityFloorTest, CoarsensCostsBeyondTheArcCostLimit) {
  Workload w;
  w.machines = {Machine(1, "a"), Machine(2, "b")};
  const int64_t odd = (int64_t{1} << 33) + 1;
  auto bytes_on = [](uint64_t machine, int64_t bytes) {
    return cluster::DataLocality{.machine = MachineId(machine), .bytes = bytes};
  };
  w.tasks = {Task(1, {bytes_on(2, odd)}), Task(2, {bytes_on(1, odd + 2)})};
  auto floor = ComputeLocalityFloor(w, 1);
  ASSERT_TRUE(floor.ok()) << floor.status();
  EXPECT_FALSE(floor->exact);
  EXPECT_EQ(floor->input_bytes, 2 * odd + 2);
  EXPECT_EQ(floor->cross_rack_bytes, 0);
}

// Against every assignment of tasks to racks (or to nowhere) on small random
// clusters: the floor places as many tasks as fit and reads no more across
// racks than the best assignment that places that many.
TEST(LocalityFloorTest, EqualsExhaustiveSearchOnSmallClusters) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int racks = 1 + static_cast<int>(rng() % 3);
    const int machines = racks + static_cast<int>(rng() % 3);
    const uint32_t slots = 1 + static_cast<uint32_t>(rng() % 2);
    const int tasks = 1 + static_cast<int>(rng() % 6);
    Workload w;
    std::vector<int> rack_of(machines + 1);
    std::vector<int64_t> capacity(racks, 0);
    for (int m = 1; m <= machines; ++m) {
      rack_of[m] = m <= racks ? m - 1 : static_cast<int>(rng() % racks);
      capacity[rack_of[m]] += slots;
      w.machines.push_back(Machine(m, absl::StrCat("r", rack_of[m])));
    }
    // bytes[t][r]: task t's blocks in rack r; total[t] adds unplaced blocks.
    std::vector<std::vector<int64_t>> bytes(tasks, std::vector<int64_t>(racks));
    std::vector<int64_t> total(tasks);
    for (int t = 0; t < tasks; ++t) {
      std::vector<cluster::DataLocality> input;
      const int entries = static_cast<int>(rng() % 4);
      for (int e = 0; e < entries; ++e) {
        const int m = 1 + static_cast<int>(rng() % machines);
        const int blocks = 1 + static_cast<int>(rng() % 5);
        // Sizes with no common divisor worth rounding to.
        const int64_t size = blocks * 999'983 + static_cast<int64_t>(rng() % 7);
        input.push_back({.machine = MachineId(m), .bytes = size});
        bytes[t][rack_of[m]] += size;
        total[t] += size;
      }
      const int64_t extra = static_cast<int64_t>(rng() % 2) * 999'983;
      total[t] += extra;
      w.tasks.push_back(Task(t + 1, input, total[t]));
    }
    // Exhaustive: rack choice per task, `racks` meaning unplaced.
    int64_t best_placed = -1, best_cross = 0;
    std::vector<int> choice(tasks, 0);
    std::function<void(int)> visit = [&](int t) {
      if (t == tasks) {
        std::vector<int64_t> used(racks, 0);
        int64_t placed = 0, cross = 0;
        for (int i = 0; i < tasks; ++i) {
          if (choice[i] == racks) continue;
          if (++used[choice[i]] > capacity[choice[i]]) return;
          ++placed;
          cross += total[i] - bytes[i][choice[i]];
        }
        if (placed > best_placed ||
            (placed == best_placed && cross < best_cross)) {
          best_placed = placed;
          best_cross = cross;
        }
        return;
      }
      for (int r = 0; r <= racks; ++r) {
        choice[t] = r;
        visit(t + 1);
      }
    };
    visit(0);
    auto floor = ComputeLocalityFloor(w, slots);
    ASSERT_TRUE(floor.ok()) << floor.status();
    EXPECT_EQ(static_cast<int64_t>(floor->placed), best_placed)
        << "trial " << trial;
    EXPECT_EQ(floor->cross_rack_bytes, best_cross) << "trial " << trial;
  }
}

// On the generator's workload the floor is no higher than the cross-rack
// share of placing every task in its best rack while room lasts (one
// feasible assignment), and the time-0 population all fits at 90%.
class LocalityFloorSyntheticTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(LocalityFloorSyntheticTest, IsBelowAFeasiblePlacement) {
  SyntheticSpec spec{.machines = 200,
                     .machines_per_rack = 20,
                     .slots_per_machine = 4,
                     .utilisation = 0.9,
                     .duration_us = 1'000'000,
                     .input_replicas = GetParam(),
                     .seed = 3};
  const Workload w = GenerateSynthetic(spec);
  auto floor = ComputeLocalityFloor(w, spec.slots_per_machine);
  ASSERT_TRUE(floor.ok()) << floor.status();
  ASSERT_GT(floor->tasks, 600u);
  EXPECT_EQ(floor->placed, floor->tasks);

  std::map<std::string, int64_t> room;
  std::map<uint64_t, std::string> rack;
  for (const SimMachine& m : w.machines) {
    room[m.rack] += spec.slots_per_machine;
    rack[m.id] = m.rack;
  }
  int64_t cross = 0, total = 0;
  for (const SimTask& t : w.tasks) {
    if (t.submit_us != 0) continue;
    // A rack's bytes: its rack entry if given (replicas), else the sum
    // of its machines' entries.
    std::map<std::string, int64_t> in, stated;
    for (const auto& e : t.input) {
      if (e.machine.value() == 0) {
        stated[e.rack] += e.bytes;
      } else {
        in[rack[e.machine.value()]] += e.bytes;
      }
    }
    for (const auto& [r, b] : stated) in[r] = b;
    std::vector<std::pair<int64_t, std::string>> order;
    for (const auto& [r, b] : in) order.emplace_back(b, r);
    std::sort(order.rbegin(), order.rend());
    int64_t kept = 0;
    bool placed = false;
    for (const auto& [b, r] : order) {
      if (room[r] > 0) {
        --room[r];
        kept = b;
        placed = true;
        break;
      }
    }
    if (!placed) {
      auto it = std::find_if(room.begin(), room.end(),
                             [](const auto& p) { return p.second > 0; });
      ASSERT_NE(it, room.end());
      --it->second;
    }
    total += t.input_bytes;
    cross += t.input_bytes - kept;
  }
  EXPECT_EQ(floor->input_bytes, total);
  EXPECT_LE(floor->cross_rack_bytes, cross);
  // Most input is in the job's home rack (synthetic.cc): the floor is well
  // below the share a rack-blind placement would read.
  EXPECT_LT(floor->cross_rack_share(), 0.5);

  // And no scheduler places that population below it: the flow
  // scheduler's warm-up, read by the simulator's own metrics.
  auto run =
      Simulate(w, "flow:quincy-qfp",
               {.slots_per_machine = spec.slots_per_machine, .horizon_us = 1});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->warmup_locality.total(), floor->input_bytes);
  EXPECT_GE(run->warmup_locality.remote, floor->cross_rack_bytes);
}

INSTANTIATE_TEST_SUITE_P(Replicas, LocalityFloorSyntheticTest,
                         ::testing::Values(1u, 3u));

double Cpu(int64_t millis) {
  return static_cast<double>(millis) / static_cast<double>(kFullCpuMillis);
}

// Rack a has 1000 milli-CPU, b as much. Both tasks read only from a; 800 +
// 400 do not fit there. Task 2 loses more per milli-CPU away from a (2
// blocks over 400 against 3 over 800), so it stays whole and a quarter of
// task 1 moves: 0.75 of a block across, rounded down.
TEST(LocalityFloorTest, ResourceFloorMovesWhatReadsLeastPerUnit) {
  Workload w;
  w.machines = {Machine(1, "a"), Machine(2, "b")};
  for (SimMachine& m : w.machines) m.cpu = Cpu(1000);
  w.tasks = {Task(1, {On(1, 3)}), Task(2, {On(1, 2)})};
  w.tasks[0].cpu = Cpu(800);
  w.tasks[1].cpu = Cpu(400);
  auto floor = ComputeLocalityFloor(w, FloorResource::kCpu);
  ASSERT_TRUE(floor.ok()) << floor.status();
  EXPECT_FALSE(floor->exact);
  EXPECT_EQ(floor->placed, 2u);
  EXPECT_EQ(floor->input_bytes, 5 * kBlockBytes);
  EXPECT_LE(floor->cross_rack_bytes, 3 * kBlockBytes / 4);
  EXPECT_GT(floor->cross_rack_bytes, 3 * kBlockBytes / 4 - kBlockBytes / 1000);
  // By memory nothing binds (no task asks for any): nothing moves.
  auto by_memory = ComputeLocalityFloor(w, FloorResource::kMemory);
  ASSERT_TRUE(by_memory.ok()) << by_memory.status();
  EXPECT_EQ(by_memory->cross_rack_bytes, 0);
  // A machine in a that reports no CPU is bounded by slots only, as the
  // fit rule has it: both tasks stay.
  w.machines.push_back(Machine(3, "a"));
  auto unreported = ComputeLocalityFloor(w, FloorResource::kCpu);
  ASSERT_TRUE(unreported.ok()) << unreported.status();
  EXPECT_EQ(unreported->placed, 2u);
  EXPECT_EQ(unreported->cross_rack_bytes, 0);
}

// With every task the same size and every machine a whole number of them,
// the relaxation has an integral optimum: the slot floor, up to rounding.
// And no cpu-mem placement of the population reads less across racks than
// either resource's floor: the flow scheduler's warm-up, as the simulator
// measures it.
TEST(LocalityFloorTest, ResourceFloorIsTheSlotFloorForEqualSizes) {
  SyntheticSpec spec{.machines = 200,
                     .machines_per_rack = 20,
                     .slots_per_machine = 4,
                     .utilisation = 0.7,  // the warm-up places all
                     .duration_us = 1'000'000,
                     .seed = 5};
  Workload w = GenerateSynthetic(spec);
  auto by_cpu = ComputeLocalityFloor(w, FloorResource::kCpu);
  auto by_memory = ComputeLocalityFloor(w, FloorResource::kMemory);
  ASSERT_TRUE(by_cpu.ok()) << by_cpu.status();
  ASSERT_TRUE(by_memory.ok()) << by_memory.status();
  ASSERT_GT(by_cpu->tasks, 500u);
  auto run = Simulate(w, "flow:profile:locality=5000",
                      {.model = Model::kCpuMemory, .horizon_us = 1});
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->warmup_locality.total(), by_cpu->input_bytes);
  EXPECT_GE(run->warmup_locality.remote, by_cpu->cross_rack_bytes);
  EXPECT_GE(run->warmup_locality.remote, by_memory->cross_rack_bytes);
  EXPECT_GT(by_cpu->cross_rack_bytes, 0);

  for (SimMachine& m : w.machines) m.cpu = Cpu(4 * 640);
  for (SimTask& t : w.tasks) t.cpu = Cpu(640);
  auto slots = ComputeLocalityFloor(w, spec.slots_per_machine);
  auto equal = ComputeLocalityFloor(w, FloorResource::kCpu);
  ASSERT_TRUE(slots.ok()) << slots.status();
  ASSERT_TRUE(equal.ok()) << equal.status();
  EXPECT_EQ(equal->placed, slots->placed);
  EXPECT_LE(equal->cross_rack_bytes, slots->cross_rack_bytes);
  EXPECT_GT(static_cast<double>(equal->cross_rack_bytes),
            0.999 * static_cast<double>(slots->cross_rack_bytes));
}

}  // namespace
}  // namespace flowsched::sim
