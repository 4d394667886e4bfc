#include "services/solver/incremental_residual_graph.h"

#include <algorithm>

namespace flowsched::solver {

void IncrementalResidualGraph::ResizeNodes(size_t size) {
  if (size <= adj_.size()) return;
  adj_.resize(size);
  regions_.resize(size, Regions{});
}

void IncrementalResidualGraph::GrowHandles(uint32_t handle) {
  if (handle < handle_limit_) return;
  const size_t needed = size_t{handle} + 1;
  // Exactly what is needed: the vectors' own growth keeps this amortised
  // O(1), and their spare capacity, never written, costs address space
  // only (a doubled size written with zeros was resident memory).
  arcs_.resize(2 * needed);
  capacity_.resize(needed, 0);
  handle_live_.resize(needed, 0);
  handle_limit_ = handle + 1;
}

void IncrementalResidualGraph::AddArc(uint32_t h, uint32_t src, uint32_t dst,
                                      int64_t capacity, int64_t cost) {
  assert(!HandleLive(h));
  GrowHandles(h);
  const uint32_t fwd = 2 * h;
  const uint32_t rev = fwd + 1;
  arcs_[fwd] =
      Arc{capacity, cost, dst, static_cast<uint32_t>(adj_[src].size())};
  adj_[src].emplace_back();
  arcs_[rev] = Arc{0, -cost, src, static_cast<uint32_t>(adj_[dst].size())};
  adj_[dst].emplace_back();
  // The new entries sit in region 3 by position; Mirror lists them if they
  // belong elsewhere.
  Mirror(fwd);
  capacity_[h] = capacity;
  handle_live_[h] = 1;
}

void IncrementalResidualGraph::RemoveArc(uint32_t h) {
  assert(HandleLive(h) && arcs_[2 * h + 1].residual == 0);
  Unlink(2 * h);
  Unlink(2 * h + 1);
  handle_live_[h] = 0;
  capacity_[h] = 0;
}

void IncrementalResidualGraph::SetCost(uint32_t h, int64_t cost) {
  arcs_[2 * h].cost = cost;
  arcs_[2 * h + 1].cost = -cost;
  Mirror(2 * h);
}

void IncrementalResidualGraph::SetCapacityAndFlow(uint32_t h, int64_t capacity,
                                                  int64_t flow) {
  assert(0 <= flow && flow <= capacity);
  capacity_[h] = capacity;
  arcs_[2 * h].residual = capacity - flow;
  arcs_[2 * h + 1].residual = flow;
  Mirror(2 * h);
}

void IncrementalResidualGraph::MoveEntry(uint32_t u, uint32_t pos, int from,
                                         int to) {
  std::vector<Entry>& list = adj_[u];
  uint32_t* end = regions_[u].end;
  auto swap_to = [&](uint32_t q) {
    if (q == pos) return;
    std::swap(list[pos], list[q]);
    arcs_[list[pos].arc].adj_pos = pos;
    arcs_[list[q].arc].adj_pos = q;
    pos = q;
  };
  // Rightwards: become the last of region `from`, then the first of the
  // next by moving the boundary. Leftwards the mirror image.
  for (; from < to; ++from) swap_to(--end[from]);
  for (; from > to; --from) swap_to(end[from - 1]++);
}

void IncrementalResidualGraph::PlaceMisplaced() {
  for (uint32_t r : misplaced_) {
    if (!HandleLive(r >> 1)) continue;  // removed since
    const uint32_t u = Tail(r);
    const uint32_t pos = arcs_[r].adj_pos;
    const int from = PositionRegion(u, pos);
    const int to = EntryRegion(adj_[u][pos]);
    if (from != to) MoveEntry(u, pos, from, to);
  }
  misplaced_.clear();
}

void IncrementalResidualGraph::Unlink(uint32_t r) {
  // Into the last region, then swap-remove: the last entry takes r's slot
  // and learns its new position.
  const uint32_t u = Tail(r);
  std::vector<Entry>& list = adj_[u];
  MoveEntry(u, arcs_[r].adj_pos, PositionRegion(u, arcs_[r].adj_pos), 3);
  const uint32_t pos = arcs_[r].adj_pos;
  list[pos] = list.back();
  arcs_[list[pos].arc].adj_pos = pos;
  list.pop_back();
}

bool IncrementalResidualGraph::RegionsHold(uint32_t u) const {
  const std::vector<Entry>& list = adj_[u];
  const uint32_t* end = regions_[u].end;
  if (end[0] > end[1] || end[1] > end[2] || end[2] > list.size()) {
    return false;
  }
  for (uint32_t i = 0; i < list.size(); ++i) {
    if (PositionRegion(u, i) != EntryRegion(list[i]) ||
        arcs_[list[i].arc].adj_pos != i) {
      return false;
    }
  }
  return true;
}

}  // namespace flowsched::solver
