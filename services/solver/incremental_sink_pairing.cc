// IncrementalSolver: IncrementalOptions::pair_through_sink, single-root
// searches that pair each imbalance with its nearest partner (or the sink's
// loan) before the global phases.

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

void IncrementalSolver::PairThroughSink(IncrementalStats& stats) {
  if (!sink_known_) {
    sink_ = kNoNode;
    for (uint32_t v = 0; v < node_limit_; ++v) {
      if (NodeExists(v) && supply_[v] < 0 &&
          (sink_ == kNoNode || supply_[v] < supply_[sink_])) {
        sink_ = v;
      }
    }
    sink_known_ = true;
  }
  // Both passes together read at most about one pass over the arcs, the
  // cost of one global search: past that, the imbalances are not a few
  // local ones (a whole population placed from scratch).
  const uint64_t budget = uint64_t{graph_.handle_limit()} + kPairingEntryBudget;
  uint64_t entries = 0;
  for (const bool backward : {true, false}) {
    const auto start = std::chrono::steady_clock::now();
    SearchRecord record{.kind = backward ? SearchRecord::Kind::kPairBackward
                                         : SearchRecord::Kind::kPairForward};
    const uint64_t settled_before = stats.nodes_touched;
    const uint64_t entries_before = entries;
    // Index loop: pairing changes excess only at nodes already in active_
    // and at the sink, which AddExcess appends.
    for (size_t i = 0; i < active_.size() && entries < budget; ++i) {
      const uint32_t v = active_[i];
      if (v == sink_ || !NodeExists(v)) continue;
      while ((backward ? excess_[v] < 0 : excess_[v] > 0) && entries < budget) {
        if ((record.roots++ & 63) == 0 && Stopped()) {
          stopped_ = true;
          return;
        }
        const int64_t moved = PairUnits(v, backward, entries, record, stats);
        if (moved == 0) break;
        record.units += moved;
      }
    }
    stats.paired_units += record.units;
    stats.pairing_searches += record.roots;
    record.nodes = stats.nodes_touched - settled_before;
    record.entries = entries - entries_before;
    record.ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    stats.searches.push_back(record);
  }
}

uint32_t IncrementalSolver::NearestPartner(uint32_t root, bool backward,
                                           uint64_t& read, int64_t& bound) {
  // Dijkstra from one root, on a binary heap of (distance, node): a search
  // here settles a few dozen nodes, where the global search's radix heap
  // and level queue would cost more to set up than they save.
  graph_.PlaceMisplaced();
  NextPhase();
  pair_heap_.clear();
  // Backward, the root lacks units: the sink lends them, or an excess node
  // gives them. Forward, the root has units for any deficit, the sink's
  // included once it has lent.
  // The sink lends without limit otherwise; an excess near the int64
  // bound would make the round fail with OutOfRange (AddExcess).
  const bool sink_lends = sink_ != kNoNode && excess_[sink_] > -kMaxExcess / 2;
  const auto pairs_with = [&](uint32_t w) {
    return backward ? ((w == sink_ && sink_lends) || excess_[w] > 0)
                    : excess_[w] < 0;
  };
  const auto later = [](const std::pair<int64_t, uint32_t>& x,
                        const std::pair<int64_t, uint32_t>& y) {
    return x > y;
  };
  label_[root].dist = 0;
  parent_arc_[root] = kNoArc;
  touched_.push_back(root);
  pair_heap_.push_back({0, root});
  uint32_t target = kNoNode;
  while (!pair_heap_.empty() && target == kNoNode) {
    std::pop_heap(pair_heap_.begin(), pair_heap_.end(), later);
    const auto [d, u] = pair_heap_.back();
    pair_heap_.pop_back();
    if (d != label_[u].dist || settled_stamp_[u] == phase_) continue;
    if (pairs_with(u)) {
      target = u;
      bound = d;
      break;
    }
    const auto [scan_begin, scan_end] = graph_.SearchRange(u, backward);
    // A hub (load spreading's X, with an arc per machine and slot) would
    // cost every unit a read of its whole list: leave the unit to the
    // global phases, which read it once for all.
    if (read + (scan_end - scan_begin) > kPairingEntryBudget) break;
    read += scan_end - scan_begin;
    settled_.push_back(u);
    settled_stamp_[u] = phase_;
    const int64_t pu = label_[u].potential;
    const AdjEntry* const list = graph_.entries(u).data();
    for (uint32_t i = scan_begin; i < scan_end; ++i) {
      const AdjEntry& arc = list[i];
      assert(graph_.MirrorsArc(arc));
      const uint32_t w = arc.head;
      const int64_t nd = backward ? d - arc.cost - pu + label_[w].potential
                                  : d + arc.cost + pu - label_[w].potential;
      if (nd >= label_[w].dist) continue;
      if (label_[w].dist == kInfinity) touched_.push_back(w);
      label_[w].dist = nd;
      parent_arc_[w] = backward ? arc.arc ^ 1u : arc.arc;
      if (nd == d && pairs_with(w)) {
        // Nothing still to settle is nearer than d: w's label is final.
        target = w;
        bound = d;
        break;
      }
      pair_heap_.push_back({nd, w});
      std::push_heap(pair_heap_.begin(), pair_heap_.end(), later);
    }
  }
  return target;
}

int64_t IncrementalSolver::PairUnits(uint32_t root, bool backward,
                                     uint64_t& entries, SearchRecord& record,
                                     IncrementalStats& stats) {
  uint64_t read = 0;
  int64_t bound = 0;
  const uint32_t target = NearestPartner(root, backward, read, bound);
  entries += read;
  stats.nodes_touched += settled_.size();
  if (target == kNoNode) {
    // No partner within the budget: the potentials stay as they were.
    for (uint32_t v : touched_) label_[v].dist = kInfinity;
    touched_.clear();
    settled_.clear();
    return 0;
  }
  record.last_distance = std::max(record.last_distance, bound);
  // The partial-Dijkstra update at the partner's distance leaves every arc
  // of the tree path at reduced cost zero (the partner's own label is
  // final), and a fresh tree's arcs all have capacity.
  UpdatePotentials(bound, backward);
  int64_t delta = backward ? -excess_[root] : excess_[root];
  if (target != sink_ || !backward) {  // the sink lends whatever is asked
    delta = std::min(delta, backward ? excess_[target] : -excess_[target]);
  }
  [[maybe_unused]] const uint32_t reached = TreePath(target, backward, delta);
  assert(reached == root);
  AugmentPath(backward ? target : root, backward ? root : target, delta, stats);
  return delta;
}

}  // namespace flowsched::solver
