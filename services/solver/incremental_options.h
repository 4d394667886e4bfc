#pragma once

// IncrementalSolver's options (how each round is repaired and searched)
// and what a Solve reports: its outcome, cost and the work it did.

#include <cstdint>
#include <vector>

#include "services/solver/mcmf_problem.h"

namespace flowsched::solver {

// One Dijkstra or blocking flow of a Solve, for profiles
// (`incremental_profile --searches`): where a round's time goes.
struct SearchRecord {
  // kPairBackward and kPairForward sum one pass of the single-root
  // searches of IncrementalOptions::pair_through_sink.
  enum class Kind : uint8_t {
    kForward,
    kBackward,
    kBlockingFlow,
    kPairBackward,
    kPairForward
  };
  Kind kind = Kind::kForward;
  // Excess nodes (forward, flows) or deficit nodes; pairing passes: the
  // searches run.
  uint32_t roots = 0;
  // Searches: units to cover; flows: augmenting paths; pairing passes:
  // units paired.
  int64_t units = 0;
  // Searches: nodes settled and adjacency entries scanned; flows: nodes
  // its backward BFS labelled, and 0.
  uint64_t nodes = 0;
  uint64_t entries = 0;
  // Searches: the distance settled last; pairing passes: the largest
  // distance of a pair.
  int64_t last_distance = 0;
  double ms = 0;
};

struct IncrementalStats {
  double solve_ms = 0;
  // Nodes settled by Dijkstra (the pairing searches included, also those
  // that gave up) plus nodes expanded by the local drain walks: a measure
  // of how much of the network the round touched.
  uint64_t nodes_touched = 0;
  // Augmenting paths (drain walks and pairing included).
  uint64_t augmentations = 0;
  uint64_t dijkstra_runs = 0;
  // Of those, the runs grown backwards from the deficit nodes.
  uint64_t backward_runs = 0;
  // Maximum flows over the admissible networks the Dijkstra runs left
  // that had an excess node connected to a deficit: one per phase at most.
  uint64_t blocking_flows = 0;
  // Of the augmentations, those along a Dijkstra's shortest-path tree.
  uint64_t tree_augmentations = 0;
  // Arcs whose flow was saturated or cancelled to restore reduced-cost
  // optimality after a change (Hapi's repair rules).
  uint64_t arcs_repaired = 0;
  // Units of imbalance cancelled by the local drain walks before any
  // Dijkstra ran.
  int64_t drained_units = 0;
  // Units routed, and single-root searches run, by the pairing passes
  // (IncrementalOptions::pair_through_sink; not in dijkstra_runs).
  int64_t paired_units = 0;
  uint64_t pairing_searches = 0;
  // Every global Dijkstra and blocking flow, in order, after the two
  // pairing passes' records (kPairBackward, kPairForward) when they ran.
  std::vector<SearchRecord> searches;
};

struct IncrementalResult {
  McmfOutcome outcome = McmfOutcome::kInfeasible;
  int64_t total_cost = 0;  // valid when outcome == kOptimal
  IncrementalStats stats;
};

struct IncrementalOptions {
  // How far each Dijkstra runs. kFirstDeficit is textbook SSP with Hapi's
  // partial Dijkstra: stop at the first deficit node. kCoverExcess keeps
  // settling until the deficits settled so far could absorb all excess, so
  // one Dijkstra plus one blocking flow serves paths of many different
  // lengths (every zero-reduced-cost path is a shortest path after the
  // potential update, whichever source it starts from).
  enum class DijkstraStop { kFirstDeficit, kCoverExcess };
  DijkstraStop dijkstra_stop = DijkstraStop::kCoverExcess;
  // Before any Dijkstra, each deficit node searches backwards along
  // zero-reduced-cost residual arcs for a nearby excess node (the "drain
  // through the sink" of a finished task) and scans at most this many arcs.
  // 0 disables the walks.
  uint32_t drain_arc_budget = 256;
  // Which side each Dijkstra grows from. A multi-source Dijkstra gives every
  // node its distance from the *nearest* root, so after the potential update
  // only the roots nearest to the other side have zero-reduced-cost paths:
  // a job of k new tasks that reach the sink at k different costs takes k
  // phases when searched from the tasks, one when searched back from the
  // sink. kAuto grows backwards once the excess nodes outnumber the deficit
  // nodes 4 times (a job arrival) or have 4 times their residual arcs (the
  // sink's unit after a task finished on a full machine: a search from the
  // sink covers the network, one from the machine a few nodes), forwards
  // otherwise (finished tasks, cost changes, failed machines); kForward
  // always grows from the excess nodes.
  enum class SearchSide { kAuto, kForward };
  SearchSide search_side = SearchSide::kAuto;
  // After Hapi's repair rules, an existing node whose changed arcs all
  // leave it (a task) re-spreads its flow over its arcs cheapest first
  // under the current potentials and takes the matching potential, instead
  // of keeping every arc the rules saturated; the imbalance then sits at
  // the arcs' heads (machines, aggregators), near the round's other
  // changes. Nodes created since the last Solve are left to the search,
  // which prices a new job's tasks from the sink at once. false keeps the
  // rules alone. (Why, measured: docs/2026-11-27-solver-measurements.md,
  // "IncrementalOptions: the measurements behind the defaults".)
  bool rebalance_leaves = true;
  // From a round's second Dijkstra on, a forward search is preceded by a
  // backward one from the deficits and its potential update. A forward
  // multi-source search gives every node its distance from the *nearest*
  // excess node, so after its update only the excess nodes that close
  // have zero-reduced-cost paths: on Quincy rounds, where each new task
  // reaches the free slots at its own cost (past full machines, through X
  // or a rack), that was one phase per distinct cost. The backward search
  // prices each excess node by its own distance, and the forward search
  // that follows makes the paths from all of them admissible at once, so
  // one blocking flow routes most of the round. The first search of a
  // round stays one-sided: load-spreading rounds finish in it, and a
  // second search would only add its cost. (Measured: the note named at
  // rebalance_leaves.)
  bool two_sided_search = true;
  // Before the global phases, pair the round's imbalances one search at a
  // time through the sink (the node of most negative supply): each deficit
  // node searches backwards for the nearest excess node or the sink, which
  // lends it the units; then each excess node searches forwards for the
  // nearest deficit, the sink's loan included. A search stops at its first
  // partner and moves the potentials of what it settled only, and gives up
  // before it reads more than 4,096 entries (a hub such as load
  // spreading's X; the unit is left to the global phases, which read the
  // hub once for every unit). The sink itself is never a root: an excess
  // left there goes to the global phases. It pays where the deficits are
  // far from the excesses through the network but near the sink (Quincy:
  // machines that lost a task while full). (Measured: the note named at
  // rebalance_leaves.)
  bool pair_through_sink = true;
};

}  // namespace flowsched::solver
