// IncrementalSolver: the drain walks, local depth-first searches over
// zero-reduced-cost arcs that cancel an imbalance along a short path before
// any Dijkstra runs.

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

void IncrementalSolver::NextWalkPass() {
  // A drain walk a round per imbalance wraps the counter after a few
  // million rounds; a stale stamp equal to the new pass would make a node
  // look visited.
  if (++pass_ == 0) {
    for (WalkState& w : walk_) w.pass = 0;
    pass_ = 1;
  }
}

void IncrementalSolver::Drain(IncrementalStats& stats) {
  if (options_.drain_arc_budget == 0) return;
  // Index loop: pushes only change excess at nodes already in active_.
  for (size_t i = 0; i < active_.size(); ++i) {
    if ((i & 255) == 255 && Stopped()) return;
    const uint32_t v = active_[i];
    if (NodeExists(v) && excess_[v] > 0) DrainWalk(v, /*forward=*/true, stats);
  }
  for (size_t i = 0; i < active_.size(); ++i) {
    if ((i & 255) == 255 && Stopped()) return;
    const uint32_t v = active_[i];
    if (NodeExists(v) && excess_[v] < 0) DrainWalk(v, /*forward=*/false, stats);
  }
}

bool IncrementalSolver::DrainWalk(uint32_t root, bool forward,
                                  IncrementalStats& stats) {
  // Forward from an excess node (a new task whose cheapest arc leads to a
  // node left short by a finished task) or backward from a deficit node (a
  // machine whose task finished, paired with the sink's excess), a DFS over
  // zero-reduced-cost residual arcs that scans at most drain_arc_budget
  // arcs. Any zero-reduced-cost path is a shortest path, so augmenting along
  // it keeps every invariant, and the common pairings cost O(path) instead
  // of a Dijkstra through high-degree nodes (sink, cluster aggregator).
  NextWalkPass();
  uint32_t budget = options_.drain_arc_budget;
  bool moved = false;
  // path_[k] joins the node at depth k to the node at depth k + 1 (root =
  // depth 0), oriented in the direction flow moves.
  path_.clear();
  auto far_end = [this, forward](uint32_t q) {
    return forward ? graph_.arc(q).head : Tail(q);
  };
  auto root_open = [this, forward, root]() {
    return forward ? excess_[root] > 0 : excess_[root] < 0;
  };
  TouchForDfs(root);
  walk_[root].state = kOnPath;
  uint32_t u = root;
  while (root_open()) {
    if (u != root && (forward ? excess_[u] < 0 : excess_[u] > 0)) {
      int64_t delta = forward ? std::min(excess_[root], -excess_[u])
                              : std::min(excess_[u], -excess_[root]);
      for (uint32_t q : path_) delta = std::min(delta, graph_.arc(q).residual);
      for (uint32_t q : path_) MoveFlow(q, delta);
      AddExcess(u, forward ? delta : -delta);
      AddExcess(root, forward ? -delta : delta);
      ++stats.augmentations;
      stats.drained_units += delta;
      moved = true;
      for (size_t k = 0; k < path_.size(); ++k) {
        if (graph_.arc(path_[k]).residual != 0) continue;
        for (size_t j = k; j < path_.size(); ++j) {
          walk_[far_end(path_[j])].state = kFresh;
        }
        path_.resize(k);
        u = path_.empty() ? root : far_end(path_.back());
        break;
      }
      continue;
    }
    const std::vector<AdjEntry>& list = graph_.entries(u);
    const auto end = static_cast<uint32_t>(list.size());
    bool advanced = false;
    for (uint32_t i = walk_[u].current_arc; i < end && budget > 0;
         ++i, --budget) {
      const AdjEntry& e = list[i];
      assert(graph_.MirrorsArc(e));
      const uint32_t q = forward ? e.arc : e.arc ^ 1u;
      // q's reduced cost is zero iff e's is (backward, q is e's partner).
      if ((forward ? e.residual : e.mate_residual) == 0 ||
          e.cost + label_[u].potential - label_[e.head].potential != 0) {
        continue;
      }
      const uint32_t w = e.head;
      TouchForDfs(w);
      if (walk_[w].state != kFresh) continue;
      walk_[u].current_arc = i;
      path_.push_back(q);
      walk_[w].state = kOnPath;
      ++stats.nodes_touched;
      u = w;
      advanced = true;
      break;
    }
    if (advanced) continue;
    if (budget == 0) break;
    walk_[u].state = kDead;
    if (path_.empty()) break;
    path_.pop_back();
    u = path_.empty() ? root : far_end(path_.back());
    ++walk_[u].current_arc;
  }
  return moved;
}

}  // namespace flowsched::solver
