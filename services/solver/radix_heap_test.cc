#include "services/solver/radix_heap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace flowsched::solver {
namespace {

std::vector<uint32_t> SortedValues(
    const std::vector<RadixHeap::Entry>& entries) {
  std::vector<uint32_t> values;
  for (const RadixHeap::Entry& e : entries) values.push_back(e.value);
  std::sort(values.begin(), values.end());
  return values;
}

TEST(RadixHeapTest, TakesEachMinimumWithAllItsEntries) {
  RadixHeap heap;
  heap.Clear();
  heap.Push(7, 1);
  heap.Push(0, 2);
  heap.Push(7, 3);
  heap.Push(1, 4);
  EXPECT_EQ(SortedValues(heap.Min()), (std::vector<uint32_t>{2}));
  EXPECT_EQ(heap.min_key(), 0);
  heap.TakeMin();
  EXPECT_EQ(SortedValues(heap.Min()), (std::vector<uint32_t>{4}));
  EXPECT_EQ(heap.min_key(), 1);
  heap.TakeMin();
  heap.Push(1, 5);  // equal to the last minimum: allowed
  EXPECT_EQ(SortedValues(heap.Min()), (std::vector<uint32_t>{5}));
  heap.TakeMin();
  EXPECT_EQ(SortedValues(heap.Min()), (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(heap.min_key(), 7);
  heap.TakeMin();
  EXPECT_TRUE(heap.empty());
  heap.Clear();  // the minimum starts over at 0
  heap.Push(0, 9);
  EXPECT_EQ(heap.min_key(), 0);
  EXPECT_EQ(SortedValues(heap.Min()), (std::vector<uint32_t>{9}));
}

// Dijkstra's use: keys pushed at or above the last minimum, over the whole
// range a distance can take (up to 2^59 in the incremental solver), against
// an ordered multimap.
TEST(RadixHeapTest, MatchesAnOrderedMapOnMonotoneSequences) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    RadixHeap heap;
    heap.Clear();
    std::multimap<int64_t, uint32_t> reference;
    // Odd trials start near 2^59; each pop moves the minimum by less than
    // the spread, so the keys stay far below 2^63.
    const int64_t spread = int64_t{1} << (rng() % 53);
    int64_t last = trial % 2 == 1 ? int64_t{1} << 59 : 0;
    uint32_t next_value = 0;
    for (int step = 0; step < 300; ++step) {
      if (reference.empty() || rng() % 3 != 0) {
        const auto key =
            last + static_cast<int64_t>(rng() % static_cast<uint64_t>(spread));
        heap.Push(key, next_value);
        reference.emplace(key, next_value);
        ++next_value;
        continue;
      }
      ASSERT_FALSE(heap.empty());
      const std::vector<uint32_t> got = SortedValues(heap.Min());
      last = reference.begin()->first;
      ASSERT_EQ(heap.min_key(), last);
      std::vector<uint32_t> want;
      while (!reference.empty() && reference.begin()->first == last) {
        want.push_back(reference.begin()->second);
        reference.erase(reference.begin());
      }
      std::sort(want.begin(), want.end());
      ASSERT_EQ(got, want) << "trial " << trial << " step " << step;
      heap.TakeMin();
    }
    EXPECT_EQ(heap.empty(), reference.empty());
  }
}

}  // namespace
}  // namespace flowsched::solver
