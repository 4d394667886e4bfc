#include "services/cluster/input_locality.h"

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace flowsched::cluster {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

// Machines 1-2 in rack "a", 3-4 in rack "b"; machine 9 has left.
const std::string* RackOf(const DataLocality& entry) {
  static const std::string a = "a";
  static const std::string b = "b";
  switch (entry.machine.value()) {
    case 1:
    case 2:
      return &a;
    case 3:
    case 4:
      return &b;
    default:
      return nullptr;
  }
}

DataLocality On(uint64_t machine, int64_t bytes) {
  return {.machine = MachineId(machine), .bytes = bytes};
}
DataLocality InRack(const std::string& rack, int64_t bytes) {
  return {.rack = rack, .bytes = bytes};
}

TEST(LocateInputTest, DisjointMachineEntriesAddUpPerRack) {
  const InputLocation where =
      LocateInput({On(1, 10), On(2, 20), On(3, 5), On(1, 1)}, 0, RackOf);
  EXPECT_THAT(where.on_machine,
              ElementsAre(Pair(MachineId(1), 11), Pair(MachineId(2), 20),
                          Pair(MachineId(3), 5)));
  EXPECT_THAT(where.in_rack, ElementsAre(Pair("a", 31), Pair("b", 5)));
  EXPECT_EQ(where.total, 36);  // no input_bytes: the racks' sum
  EXPECT_EQ(LocateInput({On(1, 10)}, 100, RackOf).total, 100);
}

TEST(LocateInputTest, ARackEntryCountsReplicasInTheRackOnce) {
  // One 8-byte block with three replicas (HDFS): machine 1 in "a", machines
  // 3 and 4 in "b". Rack "b" holds the block once, not twice.
  const InputLocation where = LocateInput(
      {On(1, 8), On(3, 8), On(4, 8), InRack("a", 8), InRack("b", 8)}, 8,
      RackOf);
  EXPECT_EQ(where.OnMachine(MachineId(4)), 8);
  EXPECT_THAT(where.in_rack, ElementsAre(Pair("a", 8), Pair("b", 8)));
  EXPECT_EQ(where.RackEntry("a"), 0u);
  EXPECT_EQ(where.RackEntry("b"), 1u);
  EXPECT_EQ(where.RackEntry("c"), 2u);  // none: in_rack.size()
  EXPECT_EQ(where.total, 8);
  // Without input_bytes the total is the racks' sum: overlapping racks
  // cannot be told apart then, so producers of replicas give input_bytes.
  EXPECT_EQ(LocateInput({On(3, 8), On(4, 8), InRack("b", 8)}, 0, RackOf).total,
            8);
}

TEST(LocateInputTest, NothingIsBelowWhatItContains) {
  // A rack entry below one of its machines, and input_bytes below a rack,
  // are raised: data on a machine is in its rack and in the input.
  const InputLocation where =
      LocateInput({On(1, 10), InRack("a", 4), InRack("b", 30)}, 20, RackOf);
  EXPECT_EQ(where.InRack("a"), 10);
  EXPECT_EQ(where.InRack("b"), 30);
  EXPECT_EQ(where.total, 30);
}

TEST(LocateInputTest, AHolderThatLeftTakesAtMostItsBytesFromItsRack) {
  // Machine 9 (gone) named rack "a" and held the block's only copy there.
  const InputLocation alone =
      LocateInput({{.machine = MachineId(9), .rack = "a", .bytes = 8},
                   On(3, 8),
                   InRack("a", 8),
                   InRack("b", 8)},
                  8, RackOf);
  EXPECT_EQ(alone.InRack("a"), 0);
  EXPECT_EQ(alone.InRack("b"), 8);
  EXPECT_EQ(alone.total, 8);
  // Machine 4 (gone, rack "b") had a copy beside machine 3's: still in b.
  const InputLocation beside =
      LocateInput({On(3, 8),
                   {.machine = MachineId(9), .rack = "b", .bytes = 8},
                   InRack("b", 8)},
                  8, RackOf);
  EXPECT_EQ(beside.InRack("b"), 8);
  // A rack entry's bytes on machines not listed survive a departure.
  const InputLocation more =
      LocateInput({On(1, 10),
                   {.machine = MachineId(9), .rack = "a", .bytes = 20},
                   InRack("a", 35)},
                  100, RackOf);
  EXPECT_EQ(more.InRack("a"), 15);
  EXPECT_EQ(more.total, 100);
}

TEST(LocateInputTest, AMachineListedTwiceCountsItsWholeBytes) {
  // Machine 1 holds 5 + 5: the rack entry of 6 is raised to 10.
  const InputLocation where =
      LocateInput({On(1, 5), On(1, 5), InRack("a", 6)}, 0, RackOf);
  EXPECT_EQ(where.OnMachine(MachineId(1)), 10);
  EXPECT_EQ(where.InRack("a"), 10);
  EXPECT_EQ(where.total, 10);
  // Bytes on a machine that left count in T only without input_bytes.
  EXPECT_EQ(LocateInput({On(9, 7), On(1, 3)}, 5, RackOf).total, 5);
}

TEST(LocateInputTest, DataOnAMachineWithoutARackIsRemoteButCounted) {
  const InputLocation where =
      LocateInput({On(9, 7), On(1, 3), On(2, 0), On(3, -5)}, 0, RackOf);
  EXPECT_THAT(where.on_machine, ElementsAre(Pair(MachineId(1), 3)));
  EXPECT_THAT(where.in_rack, ElementsAre(Pair("a", 3)));
  EXPECT_EQ(where.total, 10);
  EXPECT_EQ(where.InRack("b"), 0);
  EXPECT_EQ(where.OnMachine(MachineId(9)), 0);
}

// The rules above as plain maps, the way they read: the sorted vectors of
// LocateInput must give the same L_m, B_l and T on random inputs (repeated
// machines, rack entries with and without holders, departed holders,
// entries of no bytes).
InputLocation ByMaps(const std::vector<DataLocality>& input,
                     int64_t input_bytes) {
  std::map<MachineId, int64_t> on_machine;
  std::map<std::string, int64_t> sums, largest, stated, departed, in_rack;
  int64_t nowhere = 0;
  for (const DataLocality& entry : input) {
    if (entry.bytes <= 0) continue;
    if (entry.machine.value() == 0) {
      if (!entry.rack.empty()) stated[entry.rack] += entry.bytes;
      continue;
    }
    const std::string* rack = RackOf(entry);
    if (rack == nullptr) {
      nowhere += entry.bytes;
      if (!entry.rack.empty()) departed[entry.rack] += entry.bytes;
      continue;
    }
    const int64_t on = on_machine[entry.machine] += entry.bytes;
    sums[*rack] += entry.bytes;
    largest[*rack] = std::max(largest[*rack], on);
  }
  for (const auto& [rack, bytes] : stated) {
    const int64_t left = bytes - departed[rack];
    if (left > 0) in_rack[rack] = left;
  }
  for (const auto& [rack, sum] : sums) {
    if (!stated.contains(rack)) {
      in_rack[rack] = sum;
    } else {
      in_rack[rack] = std::max(in_rack[rack], largest[rack]);
    }
  }
  InputLocation where;
  int64_t sum = 0;
  int64_t most = 0;
  for (const auto& [rack, bytes] : in_rack) {
    where.in_rack.emplace_back(rack, bytes);
    sum += bytes;
    most = std::max(most, bytes);
  }
  where.on_machine.assign(on_machine.begin(), on_machine.end());
  where.total = std::max(input_bytes > 0 ? input_bytes : sum + nowhere, most);
  return where;
}

TEST(LocateInputTest, AgreesWithTheRulesOnRandomInputs) {
  std::mt19937 rng(11);
  auto draw = [&](int n) { return std::uniform_int_distribution(0, n)(rng); };
  const std::vector<std::string> racks = {"", "a", "b", "c"};
  for (int round = 0; round < 5000; ++round) {
    std::vector<DataLocality> input(static_cast<size_t>(draw(10)));
    for (DataLocality& entry : input) {
      const int machine = draw(5);  // 0: a rack entry; 5: gone
      entry.machine = MachineId(machine == 5 ? 9 : machine);
      entry.rack = racks[static_cast<size_t>(draw(3))];
      entry.bytes = draw(12) - 2;
    }
    const int64_t input_bytes = draw(1) == 0 ? 0 : draw(40);
    const InputLocation fast = LocateInput(input, input_bytes, RackOf);
    const InputLocation expected = ByMaps(input, input_bytes);
    ASSERT_EQ(fast.on_machine, expected.on_machine) << "round " << round;
    ASSERT_EQ(fast.in_rack, expected.in_rack) << "round " << round;
    ASSERT_EQ(fast.total, expected.total) << "round " << round;
  }
}

}  // namespace
}  // namespace flowsched::cluster
