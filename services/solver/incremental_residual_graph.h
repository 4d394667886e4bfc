#pragma once

// The residual network IncrementalSolver keeps between rounds. Arc handle h
// owns residual arcs 2h (forward: residual = capacity - flow) and 2h + 1
// (reverse: residual = flow, cost negated); r ^ 1 is r's partner. Each node
// keeps an adjacency list with one Entry per residual arc leaving it: a
// copy of the fields a search reads (cost, both residuals, head), so that
// scanning a node reads its list in order instead of one random arc each.
//
// Invariants once PlaceMisplaced() has run (RegionsHold, MirrorsArc):
// every live arc's two entries equal the arcs, arc(r).adj_pos is r's
// position in its tail's list, and each list is ordered in four regions by
// what its entries offer a search (EntryRegion): [0, end[0]) only the
// partner into the node has residual capacity, [end[0], end[1]) both,
// [end[1], end[2]) only the arc out, [end[2], size) neither. A forward
// search scans [end[0], end[2]), a backward one [0, end[1]) (SearchRange).
// Entries change region only in PlaceMisplaced and RemoveArc, never while a
// walk holds an index into a list. Not thread-safe.

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "services/solver/mcmf_problem.h"

namespace flowsched::solver {

class IncrementalResidualGraph {
 public:
  struct Arc {
    int64_t residual = 0;
    int64_t cost = 0;
    uint32_t head = 0;
    uint32_t adj_pos = 0;  // position in the tail's adjacency list
  };
  struct Entry {
    int64_t cost = 0;
    int64_t residual = 0;       // of the arc
    int64_t mate_residual = 0;  // of its partner, the arc into the tail
    uint32_t arc = 0;
    uint32_t head = 0;
  };
  struct Regions {
    uint32_t end[3] = {0, 0, 0};
  };

  // Makes nodes [0, size) addressable (new ones empty); never shrinks.
  void ResizeNodes(size_t size);
  // Makes handles up to `handle` addressable; amortised O(1).
  void GrowHandles(uint32_t handle);
  [[nodiscard]] uint32_t handle_limit() const { return handle_limit_; }
  // Resets node v's regions. REQUIRES: v's list is empty (no live arc).
  void ClearNode(uint32_t v) {
    assert(adj_[v].empty());
    regions_[v] = Regions{};
  }

  [[nodiscard]] bool HandleLive(uint32_t h) const {
    return h < handle_limit_ && handle_live_[h] != 0;
  }
  [[nodiscard]] int64_t capacity(uint32_t h) const { return capacity_[h]; }
  [[nodiscard]] const Arc& arc(uint32_t r) const { return arcs_[r]; }
  [[nodiscard]] uint32_t Tail(uint32_t r) const { return arcs_[r ^ 1u].head; }
  // Flow on handle h (0 for a free handle).
  [[nodiscard]] int64_t flow(uint32_t h) const {
    return HandleLive(h) ? arcs_[2 * h + 1].residual : 0;
  }
  [[nodiscard]] const std::vector<Entry>& entries(uint32_t u) const {
    return adj_[u];
  }
  [[nodiscard]] const Regions& regions(uint32_t u) const { return regions_[u]; }
  // The entries of u a search scans: those with a residual arc on its side.
  [[nodiscard]] std::pair<uint32_t, uint32_t> SearchRange(uint32_t u,
                                                          bool backward) const {
    const Regions& r = regions_[u];
    assert(RegionsHold(u));
    return backward ? std::pair{uint32_t{0}, r.end[1]}
                    : std::pair{r.end[0], r.end[2]};
  }

  // Adds handle h (not live) from src to dst with no flow. Its entries are
  // appended and placed by the next PlaceMisplaced. O(1) amortised.
  void AddArc(uint32_t h, uint32_t src, uint32_t dst, int64_t capacity,
              int64_t cost);
  // Removes live handle h, which must carry no flow. O(regions + 1).
  void RemoveArc(uint32_t h);
  // Changes a live handle's cost, or its capacity and flow
  // (0 <= flow <= capacity). O(1).
  void SetCost(uint32_t h, int64_t cost);
  void SetCapacityAndFlow(uint32_t h, int64_t capacity, int64_t flow);
  // Moves `delta` units onto residual arc r (and off its partner). O(1).
  void MoveResidual(uint32_t r, int64_t delta) {
    arcs_[r].residual -= delta;
    arcs_[r ^ 1u].residual += delta;
    Mirror(r);
  }
  // Puts every entry that changed region since the last call into its
  // region. O(entries moved * 3).
  void PlaceMisplaced();
  // Releases the list of misplaced entries' memory (after a bulk change).
  void ShrinkScratch() { misplaced_.shrink_to_fit(); }

  // Loads every arc of `problem` into a graph without handles, arc a as
  // handle a, each list laid out in its regions at once (no PlaceMisplaced
  // needed). Nodes must be addressable, arcs valid (ValidateArc). Returns
  // false, with part of the arcs loaded, when `stop` is seen (checked every
  // 16,384 arcs). O(n + m).
  template <typename Stop>
  bool Load(const McmfProblem& problem, Stop&& stop);

  // The region an entry belongs in (see the file comment).
  static int EntryRegion(const Entry& e) {
    if (e.residual > 0) return e.mate_residual > 0 ? 1 : 2;
    return e.mate_residual > 0 ? 0 : 3;
  }
  // Debug checks: u's list is in its regions with exact positions; an
  // entry equals the arc it mirrors.
  [[nodiscard]] bool RegionsHold(uint32_t u) const;
  [[nodiscard]] bool MirrorsArc(const Entry& e) const {
    const Arc& a = arcs_[e.arc];
    return e.cost == a.cost && e.residual == a.residual &&
           e.mate_residual == arcs_[e.arc ^ 1u].residual && e.head == a.head;
  }

 private:
  int PositionRegion(uint32_t u, uint32_t pos) const {
    const Regions& r = regions_[u];
    return pos < r.end[0] ? 0 : pos < r.end[1] ? 1 : pos < r.end[2] ? 2 : 3;
  }
  // Rewrites the entries of residual arc r and of its partner from the
  // arcs (each holds the other's residual); lists those that changed
  // region.
  void Mirror(uint32_t r) {
    const Arc& a = arcs_[r];
    const Arc& mate = arcs_[r ^ 1u];
    Entry& e = adj_[mate.head][a.adj_pos];
    const int e_was = EntryRegion(e);
    e = Entry{.cost = a.cost,
              .residual = a.residual,
              .mate_residual = mate.residual,
              .arc = r,
              .head = a.head};
    if (EntryRegion(e) != e_was) misplaced_.push_back(r);
    Entry& m = adj_[a.head][mate.adj_pos];
    const int m_was = EntryRegion(m);
    m = Entry{.cost = mate.cost,
              .residual = mate.residual,
              .mate_residual = a.residual,
              .arc = r ^ 1u,
              .head = mate.head};
    if (EntryRegion(m) != m_was) misplaced_.push_back(r ^ 1u);
  }
  // Moves the entry at u's position pos from region `from` to `to`, one
  // boundary at a time (each step a swap with an entry that stays in its
  // region), keeping adj_pos exact.
  void MoveEntry(uint32_t u, uint32_t pos, int from, int to);
  // Takes residual arc r's entry out of its tail's list.
  void Unlink(uint32_t r);

  uint32_t handle_limit_ = 0;  // one past the largest handle addressable
  std::vector<Arc> arcs_;
  std::vector<int64_t> capacity_;
  std::vector<uint8_t> handle_live_;
  std::vector<std::vector<Entry>> adj_;
  std::vector<Regions> regions_;
  // Arcs whose entry changed region since the last PlaceMisplaced.
  std::vector<uint32_t> misplaced_;
};

template <typename Stop>
bool IncrementalResidualGraph::Load(const McmfProblem& problem, Stop&& stop) {
  assert(handle_limit_ == 0 && adj_.size() >= problem.node_count);
  if (problem.arcs.empty()) return true;
  GrowHandles(static_cast<uint32_t>(problem.arcs.size() - 1));
  // Region 0: the partners of arcs entering the node with capacity; region
  // 2: the arcs leaving it with capacity; region 3: zero-capacity arcs.
  const uint32_t n = problem.node_count;
  std::vector<uint32_t> in_end(n, 0);
  std::vector<uint32_t> out_end(n, 0);
  std::vector<uint32_t> size(n, 0);
  for (const McmfArc& a : problem.arcs) {
    if (a.capacity > 0) {
      ++in_end[a.dst];
      ++out_end[a.src];
    }
    ++size[a.src];
    ++size[a.dst];
  }
  for (uint32_t v = 0; v < n; ++v) {
    out_end[v] += in_end[v];
    regions_[v] = Regions{.end = {in_end[v], in_end[v], out_end[v]}};
    adj_[v].resize(size[v]);
    // From here on in_end, out_end and size are the next free position of
    // regions 0, 2 and 3.
    size[v] = out_end[v];
    out_end[v] = in_end[v];
    in_end[v] = 0;
  }
  for (uint32_t h = 0; h < problem.arcs.size(); ++h) {
    if ((h & 16383) == 16383 && stop()) return false;
    const McmfArc& a = problem.arcs[h];
    const bool open = a.capacity > 0;
    const uint32_t fwd = 2 * h;
    const uint32_t rev = fwd + 1;
    const uint32_t out_pos = open ? out_end[a.src]++ : size[a.src]++;
    const uint32_t in_pos = open ? in_end[a.dst]++ : size[a.dst]++;
    arcs_[fwd] = Arc{a.capacity, a.cost, a.dst, out_pos};
    arcs_[rev] = Arc{0, -a.cost, a.src, in_pos};
    adj_[a.src][out_pos] = Entry{.cost = a.cost,
                                 .residual = a.capacity,
                                 .mate_residual = 0,
                                 .arc = fwd,
                                 .head = a.dst};
    adj_[a.dst][in_pos] = Entry{.cost = -a.cost,
                                .residual = 0,
                                .mate_residual = a.capacity,
                                .arc = rev,
                                .head = a.src};
    capacity_[h] = a.capacity;
    handle_live_[h] = 1;
  }
  return true;
}

}  // namespace flowsched::solver
