// IncrementalSolver: the repair at the start of a round. Fresh nodes get
// potentials, changed arcs get Hapi's saturate-or-cancel rule, and leaf
// nodes re-spread their flow, so that every residual arc has a
// non-negative reduced cost again (imbalances may remain).

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

void IncrementalSolver::PlaceFreshNodes() {
  // A node created since the last Solve has no flow yet and its potential is
  // free. Choosing the largest value that keeps its outgoing arcs at
  // non-negative reduced cost (zero on the best one) means a new task's arcs
  // need no saturation; RepairArc then only fixes incoming arcs. Hapi starts
  // new nodes at 0, which can force several of a task's arcs to saturate.
  //
  // Heads first: a fresh node is placed only once every fresh head of its
  // outgoing arcs has been, so a new task prices its arc to its new job's
  // aggregator against that aggregator's real potential rather than the
  // placeholder 0. Otherwise (potentials drift far from 0) the placeholder
  // can win, the task's arc to X ends up with positive reduced cost, and
  // every such task needs a Dijkstra phase of its own. The order is Kahn's
  // (each node counts its fresh heads; placing a node releases its fresh
  // tails), O(n + m). Nodes on a cycle of fresh nodes (or behind one) are
  // placed last, in arrival order, against whatever their heads hold then.
  std::vector<uint32_t>& pending = fresh_nodes_;
  fresh_ready_.clear();
  for (const uint32_t v : pending) {
    if (fresh_[v] == 0 || !NodeExists(v)) {
      fresh_[v] = 0;
      continue;
    }
    uint32_t heads = 0;
    for (const AdjEntry& arc : graph_.entries(v)) {
      heads += (arc.arc & 1u) == 0 && arc.residual > 0 && arc.head != v &&
               fresh_[arc.head] != 0;
    }
    fresh_heads_left_[v] = heads;
    if (heads == 0) fresh_ready_.push_back(v);
  }
  for (size_t i = 0; i < fresh_ready_.size(); ++i) {
    const uint32_t v = fresh_ready_[i];
    if (fresh_[v] == 0) continue;  // listed twice (MarkFresh prevents it)
    PriceFreshNode(v);
    fresh_[v] = 0;
    // v's fresh tails: the partners of v's reverse entries.
    for (const AdjEntry& arc : graph_.entries(v)) {
      const uint32_t u = arc.head;
      if ((arc.arc & 1u) != 0 && arc.mate_residual > 0 && u != v &&
          fresh_[u] != 0 && --fresh_heads_left_[u] == 0) {
        fresh_ready_.push_back(u);
      }
    }
  }
  for (const uint32_t v : pending) {
    if (fresh_[v] == 0) continue;
    PriceFreshNode(v);
    fresh_[v] = 0;
  }
  fresh_nodes_.clear();
}

void IncrementalSolver::PriceFreshNode(uint32_t v) {
  int64_t best_out = std::numeric_limits<int64_t>::min();
  int64_t best_in = kInfinity;
  for (const AdjEntry& arc : graph_.entries(v)) {
    if (arc.head == v) continue;
    if ((arc.arc & 1u) == 0) {
      if (arc.residual > 0) {
        best_out = std::max(best_out, label_[arc.head].potential - arc.cost);
      }
    } else if (arc.mate_residual > 0 && fresh_[arc.head] == 0) {
      // Incoming arc (arc.head -> v) with cost -arc.cost.
      best_in = std::min(best_in, label_[arc.head].potential - arc.cost);
    }
  }
  leaf_stamp_[v] = leaf_pass_;
  LogPotentialChange(v);
  if (best_out != std::numeric_limits<int64_t>::min()) {
    label_[v].potential = best_out;
  } else if (best_in != kInfinity) {
    label_[v].potential = best_in;
  }
  const int64_t pv = label_[v].potential;
  if (pv > kPotentialLimit || pv < -kPotentialLimit) {
    recenter_needed_ = true;
  }
}

void IncrementalSolver::RepairArc(uint32_t handle, IncrementalStats& stats) {
  // Hapi's rules by the sign of the reduced cost under the old potentials:
  // negative with residual capacity -> saturate; positive with flow ->
  // cancel. Either way every residual arc ends with rc >= 0, so the
  // potentials stay valid duals and SSP can resume without a Bellman-Ford.
  const uint32_t fwd = 2 * handle;
  const int64_t rc = ReducedCost(fwd);
  if (rc < 0 && graph_.arc(fwd).residual > 0) {
    Push(fwd, graph_.arc(fwd).residual);
    ++stats.arcs_repaired;
  } else if (rc > 0 && graph_.arc(fwd + 1).residual > 0) {
    Push(fwd + 1, graph_.arc(fwd + 1).residual);
    ++stats.arcs_repaired;
  }
}

void IncrementalSolver::ApplyPendingRepairs(IncrementalStats& stats) {
  if (++leaf_pass_ == 0) {  // the stamps wrapped: start them over
    std::fill(leaf_stamp_.begin(), leaf_stamp_.end(), 0);
    leaf_pass_ = 1;
  }
  // Stamps the nodes it places, which RebalanceLeaf then leaves alone.
  PlaceFreshNodes();
  leaf_candidates_.clear();
  for (uint32_t h : dirty_handles_) {
    handle_dirty_[h] = 0;
    if (!HandleLive(h)) continue;
    RepairArc(h, stats);
    const uint32_t tail = Tail(2 * h);
    if (options_.rebalance_leaves && leaf_stamp_[tail] != leaf_pass_) {
      leaf_stamp_[tail] = leaf_pass_;
      leaf_candidates_.push_back(tail);
    }
  }
  dirty_handles_.clear();
  for (uint32_t u : leaf_candidates_) RebalanceLeaf(u, stats);
}

void IncrementalSolver::RebalanceLeaf(uint32_t u, IncrementalStats& stats) {
  // With no arc entering u, u's potential appears only in the reduced
  // costs of its own arcs, rc = key + pi[u] with key = cost - pi[head]. So
  // u alone can be brought to complementary slackness: spread the units u
  // must send (its supply = its excess plus its outflow) over its arcs in
  // increasing key, and set pi[u] = -key of the last arc that got flow.
  // Arcs before it are full with rc <= 0, arcs after it empty with rc >= 0.
  // Moved units become excesses or deficits at the heads.
  const std::vector<AdjEntry>& list = graph_.entries(u);
  if (list.empty() || list.size() > kLeafArcLimit) return;
  int64_t units = excess_[u];
  leaf_arcs_.clear();
  for (const AdjEntry& e : list) {
    if ((e.arc & 1u) != 0 || e.head == u) return;  // an arc enters u
    units += e.mate_residual;                      // flow on the arc
    leaf_arcs_.emplace_back(e.cost - label_[e.head].potential, e.arc);
  }
  if (units < 0) return;  // u cannot be balanced locally
  std::sort(leaf_arcs_.begin(), leaf_arcs_.end());
  int64_t left = units;
  int64_t price_key = leaf_arcs_.front().first;  // no flow: tight on the best
  for (const auto& [key, r] : leaf_arcs_) {
    const int64_t flow = graph_.arc(r ^ 1u).residual;
    const int64_t target = std::min(left, flow + graph_.arc(r).residual);
    left -= target;
    if (target > 0) price_key = key;
    if (target == flow) continue;
    MoveFlow(r, target - flow);
    AddExcess(graph_.arc(r).head, target - flow);
    AddExcess(u, flow - target);
    ++stats.arcs_repaired;
  }
  // Units beyond the capacity of every arc stay at u as excess; every arc
  // is full then and pi[u] = -(largest key) keeps all their rc <= 0.
  if (left > 0) price_key = leaf_arcs_.back().first;
  LogPotentialChange(u);
  label_[u].potential = -price_key;
  if (-price_key > kPotentialLimit || -price_key < -kPotentialLimit) {
    recenter_needed_ = true;
  }
}

}  // namespace flowsched::solver
