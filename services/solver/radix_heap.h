#pragma once

// A monotone priority queue for Dijkstra's labels (the radix heap of Ahuja,
// Mehlhorn, Orlin and Tarjan, "Faster algorithms for the shortest path
// problem", JACM 1990). Dijkstra never pushes a key below the last minimum
// it took, so an entry can be filed by the highest bit in which its key
// differs from that minimum: bucket 0 holds the keys equal to it, bucket b
// the keys that first differ from it in bit b - 1. Taking a new minimum
// empties the first non-empty bucket into lower ones; an entry only ever
// moves down, at most 64 times and in practice once or twice, and a push
// is an append. A binary heap of (key, node) pairs paid a sift of ~17
// levels per push and pop at 150,000 labels; replacing it took 20 Quincy
// rounds at 12,500 machines from 5.8-6.2 to 4.5-4.6 s (incremental_profile).
//
// Keys are non-negative int64 distances. Stale entries (a node labelled
// again with a smaller key) stay and are skipped by the caller, as with a
// lazily filled binary heap. Not thread-safe.

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace flowsched::solver {

class RadixHeap {
 public:
  struct Entry {
    int64_t key;
    uint32_t value;
  };

  // Empties the heap and sets the minimum to 0.
  void Clear() {
    for (int b = 0; b <= max_bucket_; ++b) buckets_[b].clear();
    max_bucket_ = 0;
    last_ = 0;
    size_ = 0;
  }
  [[nodiscard]] bool empty() const { return size_ == 0; }

  // Requires key >= the last minimum taken (0 after Clear).
  void Push(int64_t key, uint32_t value) {
    assert(key >= last_);
    const int b = Bucket(key);
    buckets_[b].push_back(Entry{key, value});
    if (b > max_bucket_) max_bucket_ = b;
    ++size_;
  }

  // Makes the smallest key the new minimum and returns the entries holding
  // it, in push order; the caller takes them all with TakeMin(). Requires
  // !empty().
  const std::vector<Entry>& Min() {
    assert(size_ > 0);
    if (buckets_[0].empty()) {
      int b = 1;
      while (buckets_[b].empty()) ++b;
      std::vector<Entry>& from = buckets_[b];
      int64_t min = from.front().key;
      for (const Entry& e : from) min = e.key < min ? e.key : min;
      last_ = min;
      // Every entry of bucket b agrees with the old minimum above bit b - 1
      // and so with the new one, and lands in a bucket below b.
      for (const Entry& e : from) buckets_[Bucket(e.key)].push_back(e);
      from.clear();
      while (max_bucket_ > 0 && buckets_[max_bucket_].empty()) --max_bucket_;
    }
    return buckets_[0];
  }
  [[nodiscard]] int64_t min_key() const { return last_; }
  // Drops the entries Min() returned.
  void TakeMin() {
    size_ -= buckets_[0].size();
    buckets_[0].clear();
  }

 private:
  int Bucket(int64_t key) const {
    const auto diff = static_cast<uint64_t>(key ^ last_);
    return diff == 0 ? 0 : 64 - __builtin_clzll(diff);
  }

  std::array<std::vector<Entry>, 65> buckets_;
  int max_bucket_ = 0;
  int64_t last_ = 0;
  size_t size_ = 0;
};

}  // namespace flowsched::solver
