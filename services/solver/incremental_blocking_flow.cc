// IncrementalSolver: the blocking flow that routes a phase's units over the
// admissible network its last search left.

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

bool IncrementalSolver::BlockingFlow(IncrementalStats& stats) {
  // A maximum flow from the excess nodes to the deficit nodes over the
  // admissible network of the phase's last search: arcs with residual
  // capacity and zero reduced cost into nodes it settled (they hold every
  // shortest path it found, so this costs about what the search did
  // instead of wandering the often huge zero-cost subgraph). It is the
  // shortest augmenting path algorithm with exact distance labels (Ahuja
  // and Orlin, Naval Research Logistics 1991): one backward BFS from the
  // deficits gives each node its hop distance to the nearest one
  // (LabelHopDistances); a root advances along arcs that step one hop
  // closer, augments at a deficit, and a node with no such arc is
  // relabelled to one more than its best neighbour's label
  // (RouteFromRoot). The labels stay valid lower bounds through
  // augmentations, so the network is walked about once.
  if (++admissible_pass_ == 0) {  // the stamps wrapped: start them over
    for (WalkState& w : walk_) w.admissible_stamp = 0;
    admissible_pass_ = 1;
  }
  admissible_.clear();
  NextWalkPass();
  bool any_root = false;
  for (uint32_t root : sources_) any_root |= excess_[root] > 0;
  if (!any_root) return false;
  const auto start = std::chrono::steady_clock::now();
  const uint64_t augmentations_before = stats.augmentations;
  LabelHopDistances();
  // Labels above `gap` are cut off (see RouteFromRoot).
  uint32_t gap = kNoLevel - 1;
  bool moved = false;
  bool staged = false;
  for (size_t r = 0; r < sources_.size(); ++r) {
    if ((r & 63) == 63 && Stopped()) {
      stopped_ = true;
      break;
    }
    const uint32_t root = sources_[r];
    if (excess_[root] <= 0 || walk_[root].pass != pass_) continue;
    if (!staged) {
      staged = true;
      ++stats.blocking_flows;
    }
    moved |= RouteFromRoot(root, gap, stats);
  }
  stats.searches.push_back(SearchRecord{
      .kind = SearchRecord::Kind::kBlockingFlow,
      .roots = static_cast<uint32_t>(sources_.size()),
      .units = static_cast<int64_t>(stats.augmentations - augmentations_before),
      .nodes = bfs_queue_.size(),
      .ms = std::chrono::duration<double, std::milli>(
                std::chrono::steady_clock::now() - start)
                .count()});
  return moved;
}

void IncrementalSolver::LabelHopDistances() {
  // Backward BFS over admissible arcs, from the deficits the search
  // settled. An arc u -> w is admissible when w was settled and its
  // reduced cost is zero; u is settled too or an excess node (a root).
  // After the tree paths' pushes; the lists stay put below.
  graph_.PlaceMisplaced();
  bfs_queue_.clear();
  for (uint32_t v : deficits_) {
    if (excess_[v] >= 0 || !InLastSearch(v)) continue;
    TouchForDfs(v);
    walk_[v].level = 0;
    bfs_queue_.push_back(v);
  }
  label_count_.assign(2, 0);
  for (size_t i = 0; i < bfs_queue_.size(); ++i) {
    const uint32_t w = bfs_queue_[i];
    const uint32_t next = walk_[w].level + 1;
    const int64_t pw = label_[w].potential;
    ++label_count_[walk_[w].level];
    if (label_count_.size() <= next) label_count_.resize(next + 1, 0);
    // The entries whose partner u -> w has residual capacity (regions_).
    const AdjEntry* const list = graph_.entries(w).data();
    for (uint32_t k = 0, end = graph_.regions(w).end[1]; k < end; ++k) {
      // e is w's residual arc to u; its partner is u -> w, with residual
      // e.mate_residual and reduced cost -(e.cost + pw - pu).
      const AdjEntry& e = list[k];
      assert(e.mate_residual > 0);
      const uint32_t u = e.head;
      // The reduced cost first: it rejects most entries (a machine's
      // unused preference arcs) with one read of u's label, where the
      // visit mark first read u's walk state as well.
      if (e.cost + pw - label_[u].potential != 0 || walk_[u].pass == pass_ ||
          !(InLastSearch(u) || excess_[u] > 0)) {
        continue;
      }
      TouchForDfs(u);
      walk_[u].level = next;
      bfs_queue_.push_back(u);
    }
  }
}

bool IncrementalSolver::RouteFromRoot(uint32_t root, uint32_t& gap,
                                      IncrementalStats& stats) {
  // A label that no node holds any more (a gap) cuts every node above it
  // off from the deficits for good: a node's residual arcs lower its label
  // by at most one each, and augmentations only add arcs between nodes
  // below the gap. kNoLevel means never reached. (A node relabelled to
  // `gap` itself afterwards steps to a live node below it, so it lives.)
  const auto live = [&gap](uint32_t level) { return level <= gap; };
  bool moved = false;
  path_.clear();
  uint32_t u = root;
  while (excess_[root] > 0 && live(walk_[root].level)) {
    if (u != root && excess_[u] < 0) {
      int64_t delta = std::min(excess_[root], -excess_[u]);
      for (uint32_t a : path_) delta = std::min(delta, graph_.arc(a).residual);
      for (uint32_t a : path_) MoveFlow(a, delta);
      AddExcess(root, -delta);
      AddExcess(u, delta);
      ++stats.augmentations;
      moved = true;
      // Retreat to the tail of the first saturated arc; if none, the
      // deficit or the root is used up and the loop moves on.
      for (size_t k = 0; k < path_.size(); ++k) {
        if (graph_.arc(path_[k]).residual != 0) continue;
        path_.resize(k);
        break;
      }
      u = path_.empty() ? root : graph_.arc(path_.back()).head;
      continue;
    }
    AddAdmissibleArcs(u);
    const uint32_t begin = walk_[u].admissible_begin;
    const uint32_t end = walk_[u].admissible_end;
    const uint32_t level = walk_[u].level;
    uint32_t i = begin + walk_[u].current_arc;
    for (; i < end; ++i) {
      const auto [a, w] = admissible_[i];
      // (level 0 with no deficit left: a satisfied deficit, relabelled
      // below; level - 1 must not wrap onto kNoLevel.)
      // A node above a gap found after u was entered is skipped too.
      if (level != 0 && walk_[w].pass == pass_ && walk_[w].level == level - 1 &&
          live(walk_[w].level) && graph_.arc(a).residual != 0) {
        break;
      }
    }
    walk_[u].current_arc = i - begin;
    if (i < end) {
      path_.push_back(admissible_[i].arc);
      u = admissible_[i].head;
      continue;
    }
    // Relabel: one more than the lowest label u can still step to.
    uint32_t lowest = kNoLevel;
    for (uint32_t k = begin; k < end; ++k) {
      const auto [a, w] = admissible_[k];
      if (walk_[w].pass == pass_ && live(walk_[w].level) &&
          graph_.arc(a).residual != 0) {
        lowest = std::min(lowest, walk_[w].level);
      }
    }
    if (--label_count_[level] == 0 && level < gap) gap = level;
    walk_[u].level = lowest == kNoLevel ? kNoLevel : lowest + 1;
    walk_[u].current_arc = 0;
    if (live(walk_[u].level)) {
      if (label_count_.size() <= walk_[u].level) {
        label_count_.resize(size_t{walk_[u].level} + 1, 0);
      }
      ++label_count_[walk_[u].level];
    }
    if (path_.empty()) continue;  // the root: its loop test decides
    path_.pop_back();
    u = path_.empty() ? root : graph_.arc(path_.back()).head;
  }

  return moved;
}

void IncrementalSolver::AddAdmissibleArcs(uint32_t u) {
  if (walk_[u].admissible_stamp == admissible_pass_) return;
  walk_[u].admissible_stamp = admissible_pass_;
  walk_[u].admissible_begin = static_cast<uint32_t>(admissible_.size());
  const int64_t pu = label_[u].potential;
  for (const AdjEntry& e : graph_.entries(u)) {
    assert(graph_.MirrorsArc(e));
    // A head the BFS did not label can never be stepped into (labels are
    // only given there), so its entry would only be passed over again at
    // every advance and relabel from u.
    if (InLastSearch(e.head) && walk_[e.head].pass == pass_ &&
        e.cost + pu - label_[e.head].potential == 0) {
      admissible_.push_back(AdmissibleArc{e.arc, e.head});
    }
  }
  walk_[u].admissible_end = static_cast<uint32_t>(admissible_.size());
}

}  // namespace flowsched::solver
