// IncrementalSolver: the global Dijkstra phases on reduced costs, the
// potential updates they make, augmentation along their shortest-path
// trees, and the recentering that keeps potentials inside int64.

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "services/solver/incremental_solver.h"

namespace flowsched::solver {

void IncrementalSolver::NextPhase() {
  if (++phase_ == 0) {  // the stamps wrapped: start them over
    std::fill(settled_stamp_.begin(), settled_stamp_.end(), 0);
    phase_ = 1;
  }
}

int64_t IncrementalSolver::ShortestDistances(int64_t total, bool backward,
                                             IncrementalStats& stats) {
  // One function of 150 lines on purpose: it is the solver's hottest loop,
  // and the settle loop and the scan of each settled node share the
  // coverage bounds (covered, reached, reach_max, cutoff, finishing), kept
  // in locals rather than members read through `this` per entry.
  //
  // Multi-root Dijkstra on reduced costs (non-negative by the invariant)
  // with a lazily filled binary heap (Hapi digest 1.2: binary heap, small
  // heap, partial Dijkstra). Ties break by node index for determinism.
  // Backward, a node's label is its distance *to* the nearest deficit: the
  // residual arc into u is the partner r ^ 1 of each r in graph_.entries(u),
  // and its reduced cost is -ReducedCost(r).
  const auto start = std::chrono::steady_clock::now();
  uint64_t entries = 0;
  graph_.PlaceMisplaced();
  label_heap_.Clear();
  tree_ends_.clear();
  for (uint32_t v : backward ? deficits_ : sources_) {
    label_[v].dist = 0;
    parent_arc_[v] = kNoArc;
    touched_.push_back(v);
    label_heap_.Push(0, v);
  }
  // Once covered, a round's later searches still settle the rest of the
  // last distance. The blocking flow routes only over settled nodes, and
  // coverage is often reached midway through a plateau at that distance
  // (the sink's deficit counts whole the moment it is settled; the last
  // of a job's tasks is settled after the nodes of lower id), which left
  // a large job a few units per phase. The first search stops at
  // coverage: most rounds end in it (load spreading's plateau of machines
  // at distance 0 would only add work). So does a search for one unit,
  // which its tree path routes.
  const bool finish_level = stats.dijkstra_runs > 0 && total > 1;
  ++stats.dijkstra_runs;
  if (backward) ++stats.backward_runs;
  NextPhase();
  int64_t covered = 0;
  int64_t last = kInfinity;
  // Once the other-side nodes reached so far (at tentative distances up to
  // reach_max) cover `total`, the search stops at or before distance
  // reach_max, so a label above it is never settled and need not enter the
  // heap: most of the running tasks a machine or aggregator would
  // otherwise push.
  int64_t reached = 0;
  int64_t reach_max = 0;
  int64_t cutoff = kInfinity;
  const bool first_only =
      options_.dijkstra_stop == IncrementalOptions::DijkstraStop::kFirstDeficit;
  // Two queues settle in the same (distance, node) order as one heap:
  // label_heap_ (a radix heap) holds the labels above the distance being
  // settled, level_queue_ (a heap by id) the node ids at it. Scheduling
  // networks are plateaus of zero reduced cost (a load-spreading round
  // settles its 12,500 machines at distance 0), so most labels are pushed
  // and popped at the current distance, where a heap of 4-byte ids is
  // cheaper than one of (distance, id) pairs. (A FIFO for the level would
  // settle other nodes among equals, and the blocking flows would route
  // less.)
  level_queue_.clear();
  bool finishing = false;
  const auto by_id = std::greater<uint32_t>();
  int64_t level = 0;
  while (true) {
    uint32_t u;
    int64_t d;
    if (level_queue_.empty()) {
      if (label_heap_.empty() || finishing) break;
      // A new level: every label at its distance moves to the level heap.
      for (const RadixHeap::Entry& e : label_heap_.Min()) {
        if (label_[e.value].dist == e.key &&
            settled_stamp_[e.value] != phase_) {
          level_queue_.push_back(e.value);
        }
      }
      level = label_heap_.min_key();
      label_heap_.TakeMin();
      std::make_heap(level_queue_.begin(), level_queue_.end(), by_id);
      continue;
    }
    std::pop_heap(level_queue_.begin(), level_queue_.end(), by_id);
    u = level_queue_.back();
    level_queue_.pop_back();
    d = level;
    if (d != label_[u].dist || settled_stamp_[u] == phase_) continue;
    if ((settled_.size() & 4095) == 4095 && Stopped()) {
      stopped_ = true;
      break;
    }
    settled_.push_back(u);
    settled_stamp_[u] = phase_;
    last = d;
    const int64_t other_side = backward ? excess_[u] : -excess_[u];
    if (other_side > 0) {
      tree_ends_.push_back(u);
      covered += other_side;
      if (first_only || covered >= total) {
        if (!finish_level) break;
        finishing = true;
      }
    }
    const int64_t pu = label_[u].potential;
    // The node settled next is most likely the level's next id: start
    // loading its entries while u's are scanned (a miss per settled node).
    if (!level_queue_.empty()) {
      __builtin_prefetch(graph_.entries(level_queue_.front()).data());
    }
    // Only the entries with a residual arc on the search's side (regions_).
    const AdjEntry* const list = graph_.entries(u).data();
    const auto [scan_begin, scan_end] = graph_.SearchRange(u, backward);
    entries += scan_end - scan_begin;
    for (uint32_t i = scan_begin; i < scan_end; ++i) {
      const AdjEntry& arc = list[i];
      assert(graph_.MirrorsArc(arc));
      assert(backward ? arc.mate_residual > 0 : arc.residual > 0);
      const uint32_t w = arc.head;
      const int64_t nd = backward ? d - arc.cost - pu + label_[w].potential
                                  : d + arc.cost + pu - label_[w].potential;
      if (nd < label_[w].dist && nd <= cutoff && (!finishing || nd == d)) {
        if (label_[w].dist == kInfinity) {
          touched_.push_back(w);
          const int64_t amount = backward ? excess_[w] : -excess_[w];
          if (amount > 0) {
            reach_max = std::max(reach_max, nd);
            reached = amount >= total - reached ? total : reached + amount;
            if (first_only || reached >= total) cutoff = reach_max;
          }
        }
        label_[w].dist = nd;
        parent_arc_[w] = backward ? arc.arc ^ 1u : arc.arc;
        __builtin_prefetch(&graph_.entries(w));
        if (nd == d) {
          level_queue_.push_back(w);
          std::push_heap(level_queue_.begin(), level_queue_.end(), by_id);
        } else {
          label_heap_.Push(nd, w);
        }
      }
    }
  }
  stats.nodes_touched += settled_.size();
  stats.searches.push_back(SearchRecord{
      .kind = backward ? SearchRecord::Kind::kBackward
                       : SearchRecord::Kind::kForward,
      .roots =
          static_cast<uint32_t>(backward ? deficits_.size() : sources_.size()),
      .units = total,
      .nodes = settled_.size(),
      .entries = entries,
      .last_distance = last,
      .ms = std::chrono::duration<double, std::milli>(
                std::chrono::steady_clock::now() - start)
                .count()});
  if (covered == 0 || stopped_) {
    for (uint32_t v : touched_) label_[v].dist = kInfinity;
    touched_.clear();
    settled_.clear();
    return kInfinity;
  }
  return last;
}

void IncrementalSolver::UpdatePotentials(int64_t bound, bool backward) {
  // Forward: pi[v] += min(dist[v], bound) - bound. Only settled nodes move,
  // and every residual arc keeps rc >= 0 (the unsettled side is at least
  // `bound` away). This is Hapi's partial-Dijkstra update (digest 1.2).
  // Backward, with dist the distance to a deficit: pi[v] += bound -
  // min(dist[v], bound), the same argument read against the arcs.
  for (uint32_t v : settled_) {
    NodeLabel& l = label_[v];
    if (l.dist == bound) continue;
    LogPotentialChange(v);
    l.potential += backward ? bound - l.dist : l.dist - bound;
    if (l.potential < -kPotentialLimit || l.potential > kPotentialLimit) {
      recenter_needed_ = true;
    }
  }
  for (uint32_t v : touched_) label_[v].dist = kInfinity;
  settled_.clear();
  touched_.clear();
}

uint32_t IncrementalSolver::TreePath(uint32_t end, bool backward,
                                     int64_t& delta) {
  path_.clear();
  uint32_t v = end;
  for (uint32_t a = parent_arc_[v]; a != kNoArc; a = parent_arc_[v]) {
    assert(ReducedCost(a) == 0);
    // A tree path visits each node once; the bound only guarantees that
    // a broken tree ends the walk instead of looping (Debug asserts).
    assert(path_.size() < node_limit_);
    if (graph_.arc(a).residual == 0 || path_.size() >= node_limit_)
      return kNoNode;
    delta = std::min(delta, graph_.arc(a).residual);
    path_.push_back(a);
    v = backward ? graph_.arc(a).head : Tail(a);
  }
  return v;
}

void IncrementalSolver::AugmentPath(uint32_t from, uint32_t to, int64_t delta,
                                    IncrementalStats& stats) {
  for (uint32_t a : path_) MoveFlow(a, delta);
  AddExcess(from, -delta);
  AddExcess(to, delta);
  ++stats.augmentations;
}

bool IncrementalSolver::AugmentTreePaths(bool backward,
                                         IncrementalStats& stats) {
  // The search's tree already holds a shortest path from each settled
  // other-side node to a root, all of whose arcs the potential update left
  // at reduced cost zero. Walking them costs their length, while a
  // blocking flow labels the whole admissible network, which in a Quincy
  // round holds tens of thousands of nodes at reduced cost zero; what the
  // tree paths cannot route (arcs or roots they share) is left to
  // BlockingFlow.
  bool moved = false;
  for (const uint32_t end : tree_ends_) {
    if (backward ? excess_[end] <= 0 : excess_[end] >= 0) continue;
    int64_t delta = backward ? excess_[end] : -excess_[end];
    const uint32_t root = TreePath(end, backward, delta);
    if (root == kNoNode) continue;  // an arc of the path has closed
    const int64_t root_units = backward ? -excess_[root] : excess_[root];
    if (root_units <= 0) continue;
    delta = std::min(delta, root_units);
    AugmentPath(backward ? end : root, backward ? root : end, delta, stats);
    ++stats.tree_augmentations;
    moved = true;
  }
  tree_ends_.clear();
  return moved;
}

void IncrementalSolver::RecenterPotentials() {
  // Shortest distances D from a virtual root with a zero-cost arc to every
  // node are valid potentials with span <= (n - 1) * max|cost|. They are
  // computed by one Dijkstra on reduced costs (the current potentials are
  // valid), with the root's potential P = max pi giving the root arcs
  // reduced cost P - pi[v] >= 0; then D = dist - P + pi. O(m log n), run
  // only when potentials drift past 2^60.
  // Restore rc >= 0 on every residual arc first: Dijkstra needs it, and a
  // negative cycle would never terminate.
  IncrementalStats unused;
  ApplyPendingRepairs(unused);
  recenter_needed_ = false;
  int64_t top = std::numeric_limits<int64_t>::min();
  for (uint32_t v = 0; v < node_limit_; ++v) {
    if (NodeExists(v)) top = std::max(top, label_[v].potential);
  }
  if (top == std::numeric_limits<int64_t>::min()) return;
  const auto cmp = std::greater<std::pair<int64_t, uint32_t>>();
  heap_.clear();
  std::vector<int64_t> dist(node_limit_, kInfinity);
  for (uint32_t v = 0; v < node_limit_; ++v) {
    if (!NodeExists(v)) continue;
    dist[v] = top - label_[v].potential;
    heap_.emplace_back(dist[v], v);
  }
  std::make_heap(heap_.begin(), heap_.end(), cmp);
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), cmp);
    const auto [d, u] = heap_.back();
    heap_.pop_back();
    if (d != dist[u]) continue;
    for (const AdjEntry& arc : graph_.entries(u)) {
      if (arc.residual == 0) continue;
      const int64_t nd =
          d + arc.cost + label_[u].potential - label_[arc.head].potential;
      if (nd < dist[arc.head]) {
        dist[arc.head] = nd;
        heap_.emplace_back(nd, arc.head);
        std::push_heap(heap_.begin(), heap_.end(), cmp);
      }
    }
  }
  LogEverythingChanged();
  for (uint32_t v = 0; v < node_limit_; ++v) {
    if (NodeExists(v))
      label_[v].potential = dist[v] - top + label_[v].potential;
  }
}

}  // namespace flowsched::solver
