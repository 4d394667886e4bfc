#pragma once

// An incremental min-cost flow solver: it keeps the residual network, the
// last optimal flow and the node potentials between scheduling rounds,
// applies a batch of graph changes, repairs the flow and re-optimises only
// the part of the network the changes disturbed (Firmament, OSDI 2016,
// section 5; Hapi, papers/hapi-digest.md section 3).
//
// Usage: mirror the caller's network with SetSupply / SetArc / RemoveArc /
// RemoveNode, then call Solve() once per round. Node ids and arc handles are
// chosen by the caller; both are dense indices that may be reused after
// removal. Not thread-safe.

#include <atomic>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/solver/int128.h"
#include "services/solver/mcmf_problem.h"
#include "services/solver/radix_heap.h"

namespace flowsched::solver {

// Node ids and arc handles index arrays, and each handle owns residual arcs
// 2h and 2h + 1 (uint32), so both stay below 2^31.
inline constexpr uint32_t kMaxIncrementalNodeId = (uint32_t{1} << 31) - 2;
inline constexpr uint32_t kMaxIncrementalArcHandle = (uint32_t{1} << 31) - 2;

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

class IncrementalSolver {
 public:
  explicit IncrementalSolver(IncrementalOptions options = {});

  // Sets a node's supply (> 0 source, < 0 sink), creating the node if it does
  // not exist. InvalidArgument if node > kMaxIncrementalNodeId or |supply| >
  // kMaxNodeSupply. Supplies must sum to zero only when Solve() runs.
  absl::Status SetSupply(uint32_t node, int64_t supply);

  // Loads a whole problem into an empty solver: node v and arc handle a are
  // the problem's node v and arc a. The same network as SetSupply for every
  // node and SetArc for every arc, with each array sized once and each
  // adjacency list laid out in its regions at once. FailedPrecondition on a
  // solver that has nodes; InvalidArgument for a bad arc (ValidateArc,
  // checked before anything is loaded) or supply; Cancelled when the stop
  // flag is raised (the solver then holds part of the problem and is only
  // fit to be discarded).
  absl::Status Load(const McmfProblem& problem);
  // Removes a node; its supply leaves the total with it. NotFound for an
  // unknown node, FailedPrecondition if any arc still touches it.
  absl::Status RemoveNode(uint32_t node);

  // Adds arc `handle` (if free) or changes its capacity and cost. Changing
  // the endpoints of a live handle is a removal plus an addition. NotFound if
  // an endpoint does not exist; InvalidArgument for a handle above
  // kMaxIncrementalArcHandle, capacity outside [0, kMaxArcCapacity] or
  // |cost| > kMaxArcCost.
  absl::Status SetArc(uint32_t handle, uint32_t src, uint32_t dst,
                      int64_t capacity, int64_t cost);

  // NotFound for a handle that is not live. Flow on the arc is cancelled and
  // becomes an imbalance at its endpoints.
  absl::Status RemoveArc(uint32_t handle);

  // Repairs the previous optimal flow for the changes since the last Solve
  // and re-optimises. InvalidArgument if supplies do not sum to zero (the
  // state is untouched, so the caller may fix supplies and retry);
  // OutOfRange if node_count * max|cost| exceeds 2^59 or a number left int64
  // (the solver must then be rebuilt). kInfeasible leaves a consistent
  // pseudoflow: the remaining imbalances are kept, and a later Solve after
  // more changes continues from there.
  absl::StatusOr<IncrementalResult> Solve();

  // Flow on a live handle (0 for a free one) and the potential of a node in
  // the McmfSolution convention (rc = cost - p[src] + p[dst]), as of the
  // last Solve.
  int64_t flow(uint32_t handle) const;
  int64_t potential(uint32_t node) const;
  // Calls f(handle, flow) for every live handle that carries flow, in
  // ascending handle order: one sequential pass over the residual arcs,
  // the cheapest way to read a whole solution without an Export.
  template <typename F>
  void ForEachFlow(F&& f) const {
    for (uint32_t h = 0; h < handle_limit_; ++h) {
      const int64_t units = arcs_[2 * h + 1].residual;
      if (units != 0 && handle_live_[h] != 0) f(h, units);
    }
  }

  // Exports the current network and, if the last Solve was kOptimal, its
  // solution: node_count is one past the largest node id ever used (free ids
  // are isolated nodes with supply 0), arcs are the live handles in
  // ascending order, and arc_handles[i] is the handle of problem.arcs[i].
  // O(n + m). Meant to be called right after Solve (for the checker).
  void Export(McmfProblem& problem, McmfSolution& solution,
              std::vector<uint32_t>& arc_handles) const;

  // Installs an optimal flow and potentials for the current network, found
  // by another algorithm (a cold start by cost scaling, or the winner of a
  // portfolio race), so that the next Solve repairs from it. `flow` is
  // indexed by handle, `potentials` by node (McmfSolution convention).
  // Checks bounds, conservation and complementary slackness first and
  // changes nothing when they fail (InvalidArgument naming the first
  // violation). O(n + m).
  absl::Status InstallSolution(const std::vector<int64_t>& flow,
                               const std::vector<int64_t>& potentials);

  // Recomputes potentials from scratch as shortest-path distances from a
  // virtual root (span <= node_count * max|cost|). Solve() calls it when
  // potentials drift towards the int64 limit; public for tests. Applies the
  // pending arc repairs first (as Solve would), so it is safe between
  // changes. O(m log n).
  void RecenterPotentials();

  uint32_t node_limit() const { return node_limit_; }

  // Cooperative cancellation for a portfolio race: Solve checks the flag
  // between Dijkstra phases, every 4,096 nodes a search settles, every 64
  // roots of a blocking flow, every 256 drain walks and every 64 pairing
  // searches (the first of each pass included), and returns
  // Cancelled, leaving a consistent pseudoflow (like an infeasible round)
  // that InstallSolution or a later Solve can continue from. (A phase of
  // a 12,500-machine network takes 20-100 ms: a losing racer that checked
  // only between phases held the portfolio's join that long.)
  void set_stop_flag(const std::atomic<bool>* stop) { stop_ = stop; }

 private:
  struct ResidualArc {
    int64_t residual = 0;  // reverse arc: the forward arc's flow
    int64_t cost = 0;      // negated on the reverse arc
    uint32_t head = 0;
    uint32_t adj_pos = 0;  // position in the tail's adjacency list
  };
  // A residual arc as its tail's adjacency holds it: a copy of the fields
  // the searches read, so that scanning a node reads its entries in order
  // instead of one random 24-byte arc each (a task's handful of arcs was a
  // cache miss apiece: most of a Quincy round's Dijkstra time). arcs_ stays
  // the truth; Mirror copies an arc into its entry after every change.
  struct AdjEntry {
    int64_t cost = 0;
    int64_t residual = 0;       // of the arc
    int64_t mate_residual = 0;  // of its partner, the arc into the tail
    uint32_t arc = 0;
    uint32_t head = 0;
  };

  static constexpr int64_t kInfinity = INT64_MAX;
  // No node: above every id (kMaxIncrementalNodeId).
  static constexpr uint32_t kNoNode = std::numeric_limits<uint32_t>::max();

  bool NodeExists(uint32_t v) const {
    return v < node_limit_ && node_exists_[v] != 0;
  }
  bool HandleLive(uint32_t h) const {
    return h < handle_limit_ && handle_live_[h] != 0;
  }
  uint32_t Tail(uint32_t r) const { return arcs_[r ^ 1u].head; }
  // The region (see regions_) an entry belongs in, and the one its
  // position in u's list is in.
  static int EntryRegion(const AdjEntry& e) {
    if (e.residual > 0) return e.mate_residual > 0 ? 1 : 2;
    return e.mate_residual > 0 ? 0 : 3;
  }
  int PositionRegion(uint32_t u, uint32_t pos) const {
    const AdjRegions& r = regions_[u];
    return pos < r.end[0] ? 0 : pos < r.end[1] ? 1 : pos < r.end[2] ? 2 : 3;
  }
  // Debug builds check it for every node a search settles.
  bool RegionsHold(uint32_t u) const {
    const std::vector<AdjEntry>& list = adj_[u];
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
  int64_t ReducedCost(uint32_t r) const {
    const ResidualArc& arc = arcs_[r];
    return arc.cost + label_[arcs_[r ^ 1u].head].potential -
           label_[arc.head].potential;
  }

  void GrowNodes(uint32_t node);
  void GrowHandles(uint32_t handle);
  void AddExcess(uint32_t v, int64_t delta);
  void MarkActive(uint32_t v);
  // Queues v for PlaceFreshNodes if it has no arcs (new or isolated).
  void MarkFresh(uint32_t v);
  // Moves `delta` units onto residual arc r (and off its partner).
  void Push(uint32_t r, int64_t delta);
  // Moves flow along residual arc r without touching excesses (path
  // interiors, whose net excess change is zero).
  void MoveFlow(uint32_t r, int64_t delta);
  void Unlink(uint32_t r);
  // Moves the entry at u's position pos from region `from` to `to`, one
  // boundary at a time (each step a swap with an entry that stays in its
  // region), keeping adj_pos exact.
  void MoveEntry(uint32_t u, uint32_t pos, int from, int to);
  // Puts every entry listed in misplaced_ into its region.
  void PlaceMisplaced();
  // Rewrites the adjacency entries of residual arc r and of its partner
  // from arcs_ (both change together: each holds the other's residual).
  void Mirror(uint32_t r);
  // Debug builds: the entry equals the arc it mirrors.
  bool MirrorsArc(const AdjEntry& e) const;
  void RemoveArcInternal(uint32_t handle);

  // Places fresh nodes and repairs changed arcs, restoring rc >= 0 on every
  // residual arc (imbalances may remain).
  void ApplyPendingRepairs(IncrementalStats& stats);
  void PlaceFreshNodes();
  // Gives fresh node v the potential PlaceFreshNodes describes, from the
  // current potentials of its heads (and, without arcs out, its tails).
  void PriceFreshNode(uint32_t v);
  void RepairArc(uint32_t handle, IncrementalStats& stats);
  // IncrementalOptions::rebalance_leaves for one node; no-op unless every
  // residual arc of u leaves it (no arc enters u), there are at most
  // kLeafArcLimit of them, and u can send what it must (supply >= 0).
  void RebalanceLeaf(uint32_t u, IncrementalStats& stats);
  void Drain(IncrementalStats& stats);
  bool DrainWalk(uint32_t root, bool forward, IncrementalStats& stats);
  // Dijkstra on reduced costs from the roots (forward: the excess nodes, over
  // residual arcs; backward: the deficit nodes, over residual arcs
  // reversed) until the settled nodes of the other side cover `total`
  // units. Returns the last settled distance, kInfinity if none was reached
  // or the stop flag was seen (then stopped_ is set and no label is kept).
  int64_t ShortestDistances(int64_t total, bool backward,
                            IncrementalStats& stats);
  void UpdatePotentials(int64_t bound, bool backward);
  // IncrementalOptions::pair_through_sink: the backward pass, then the
  // forward one, each summed in a SearchRecord.
  void PairThroughSink(IncrementalStats& stats);
  // One single-root search from `root` to its nearest partner, the
  // potential update and the augmentation along its tree path; returns
  // the units moved (0: no partner within the budget, nothing changed).
  // Adds the entries it read to `entries`.
  int64_t PairUnits(uint32_t root, bool backward, uint64_t& entries,
                    SearchRecord& record, IncrementalStats& stats);
  // The entries of u a search scans: those with a residual arc on its
  // side (regions_).
  std::pair<uint32_t, uint32_t> SearchRange(uint32_t u, bool backward) const;
  // Walks the last search's tree from `end` to its root into path_,
  // lowering `delta` to the smallest residual capacity on the way; returns
  // the root, or kNoNode if an arc of the path has no capacity left.
  uint32_t TreePath(uint32_t end, bool backward, int64_t& delta);
  // Moves `delta` units along path_ and from `from`'s excess to `to`'s.
  void AugmentPath(uint32_t from, uint32_t to, int64_t delta,
                   IncrementalStats& stats);
  // Starts a search's settled stamps (settled_stamp_ == phase_), and a
  // walk's visited stamps (walk_[v].pass == pass_); both start over when
  // their counter wraps.
  void NextPhase();
  void NextWalkPass();
  // Augments along the last search's shortest-path tree: from each
  // other-side node it settled back to the tree's root, one path each, as
  // long as both ends still have units and every arc residual capacity.
  // Call after UpdatePotentials (tree arcs are then at reduced cost zero).
  bool AugmentTreePaths(bool backward, IncrementalStats& stats);
  bool BlockingFlow(IncrementalStats& stats);
  void TouchForDfs(uint32_t v);

  bool Stopped() const {
    return stop_ != nullptr && stop_->load(std::memory_order_relaxed);
  }

  IncrementalOptions options_;
  const std::atomic<bool>* stop_ = nullptr;
  // Set when a search or a blocking flow saw the stop flag; Solve then
  // returns Cancelled.
  bool stopped_ = false;

  // Nodes.
  uint32_t node_limit_ = 0;  // one past the largest id ever used
  std::vector<uint8_t> node_exists_;
  std::vector<int64_t> supply_;
  std::vector<int64_t> excess_;  // supply + inflow - outflow
  // Internal potential pi with reduced cost c + pi[u] - pi[v] >= 0 on every
  // residual arc with capacity (published as -pi), next to the Dijkstra
  // label: a scanned arc reads both of its head, one cache line.
  struct NodeLabel {
    int64_t potential = 0;
    int64_t dist = kInfinity;  // Dijkstra scratch, reset only where touched
  };
  std::vector<NodeLabel> label_;
  std::vector<std::vector<AdjEntry>> adj_;  // residual arcs leaving the node
  // Each adjacency list is kept in four regions by what its entries give a
  // search: [0, end[0]) only the partner into the node (residual 0,
  // mate_residual > 0), [end[0], end[1]) both, [end[1], end[2]) only the arc
  // out (residual > 0, mate_residual 0), [end[2], size) neither. A forward
  // search scans [end[0], end[2]), a backward one [0, end[1]). A machine
  // of a Quincy network holds ~60 entries, most the empty partners of other
  // tasks' preference arcs, and a running task ~8 of which a backward
  // search needs the one carrying its flow: of the 4.4 M entries the full
  // lists gave a 12,500-machine round's searches, 2.1 M could be followed.
  struct AdjRegions {
    uint32_t end[3] = {0, 0, 0};
  };
  std::vector<AdjRegions> regions_;
  // Arcs whose entry changed region since the last PlaceMisplaced. Entries
  // move only there and in Unlink (removing an arc, between rounds), so the
  // arc walks (drain, blocking flow), which keep an index into a list while
  // they push, never see a list reordered.
  std::vector<uint32_t> misplaced_;
  std::vector<uint8_t> in_active_;
  std::vector<uint8_t> fresh_;
  std::vector<uint32_t> active_;  // nodes that may have nonzero excess
  std::vector<uint32_t> fresh_nodes_;
  // PlaceFreshNodes scratch: per fresh node, its residual arcs into fresh
  // nodes not yet placed; the nodes ready to be placed, in order.
  std::vector<uint32_t> fresh_heads_left_;
  std::vector<uint32_t> fresh_ready_;
  Int128 supply_sum_ = 0;
  uint32_t node_count_live_ = 0;

  // Arcs: handle h owns residual arcs 2h (forward) and 2h + 1 (reverse).
  uint32_t handle_limit_ = 0;
  std::vector<ResidualArc> arcs_;
  std::vector<int64_t> capacity_;
  std::vector<uint8_t> handle_live_;
  std::vector<uint8_t> handle_dirty_;
  std::vector<uint32_t> dirty_handles_;
  int64_t max_abs_cost_ = 0;  // over every cost ever set; monotone

  Int128 total_cost_ = 0;  // sum cost * flow, kept up to date by Push
  bool overflow_ = false;  // an excess left [-2^62, 2^62]
  bool recenter_needed_ = false;
  McmfOutcome last_outcome_ = McmfOutcome::kOptimal;

  // Dijkstra scratch, reset only where touched (and label_[v].dist).
  std::vector<uint32_t> touched_;
  std::vector<uint32_t> settled_;
  // The labels above the distance being settled (ShortestDistances), and
  // RecenterPotentials' binary heap (its keys may be negative).
  RadixHeap label_heap_;
  std::vector<std::pair<int64_t, uint32_t>> heap_;
  std::vector<uint32_t> level_queue_;  // ids at the distance being settled
  std::vector<uint32_t> sources_;      // excess nodes of this phase
  std::vector<uint32_t> deficits_;     // deficit nodes of this phase
  uint32_t phase_ = 0;  // searches run; settled_stamp_ marks the last one's
  // PairUnits' heap of (distance, node).
  std::vector<std::pair<int64_t, uint32_t>> pair_heap_;
  // The sink of pair_through_sink: a node of negative supply, the most
  // negative when chosen, replaced when another's supply falls below it;
  // kNoNode if none. When the sink's supply rises to 0 or above, or it is
  // removed, the next Solve chooses again (an O(n) scan).
  uint32_t sink_ = kNoNode;
  bool sink_known_ = true;
  std::vector<uint32_t> settled_stamp_;
  // The residual arc by which the last search labelled a node, pointing
  // towards its root (kNoArc at a root): forward the arc into the node,
  // backward the arc out of it. Valid for the nodes that search settled.
  static constexpr uint32_t kNoArc = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> parent_arc_;
  // The other-side nodes the last search settled, in settle order.
  std::vector<uint32_t> tree_ends_;
  // The blocking flow's region: the nodes the phase's last search settled.
  // In a two-sided phase that is the forward search, which finishes its
  // last distance, so every zero-reduced-cost arc out of a node it settled
  // leads into one it settled (a head left out would have had a label at
  // most the bound); what only the backward presearch settled is out of
  // the excess nodes' reach. (It used to be in the region, and the
  // blocking flow labelled 16,000-30,000 such nodes a phase in the
  // 12,500-machine rounds at 300x.)
  bool InLastSearch(uint32_t v) const { return settled_stamp_[v] == phase_; }

  // DFS scratch; stamps avoid O(n) resets.
  enum : uint8_t { kFresh = 0, kOnPath = 1, kDead = 2 };
  uint32_t pass_ = 0;
  // A node's state in the drain walks and blocking flows, in one struct:
  // a BFS or DFS step into a node reads several fields (a cache miss each
  // as separate arrays).
  struct WalkState {
    uint32_t pass = 0;
    // Index into adj_[v] (drain walks) or v's admissible entries
    // (BlockingFlow).
    uint32_t current_arc = 0;
    // BlockingFlow's distance label: hops to the nearest deficit.
    uint32_t level = 0;
    // v's entries are admissible_[admissible_begin .. admissible_end) when
    // admissible_stamp == admissible_pass_; current_arc counts from
    // admissible_begin during BlockingFlow.
    uint32_t admissible_stamp = 0;
    uint32_t admissible_begin = 0;
    uint32_t admissible_end = 0;
    uint8_t state = kFresh;
  };
  std::vector<WalkState> walk_;
  std::vector<uint32_t> path_;
  std::vector<uint32_t> bfs_queue_;
  // The admissible network of a phase, built by BlockingFlow when it first
  // steps from a node and used by every later step and relabel there: the
  // node's entries of adj_ at zero reduced cost into a node the phase's
  // last search settled and the flow's BFS labelled, in adjacency order
  // (residual capacity is tested at use: augmentations open and close
  // arcs, while potentials, stamps and the labelled set stay fixed).
  // Scanning adj_ at each step had passed the cluster aggregator's 150,000
  // arcs again and again; the unlabelled heads, which no step or relabel
  // can use, took 9-12% of the blocking flows' time on incr-quincy-m12500
  // (paired rounds, 2026-11-24).
  // Entries carry the head, which stays fixed, so that a step tests the
  // head's state before it loads the arc for its residual.
  struct AdmissibleArc {
    uint32_t arc;
    uint32_t head;
  };
  std::vector<AdmissibleArc> admissible_;
  // BlockingFlow: how many nodes hold each distance label.
  std::vector<uint32_t> label_count_;
  uint32_t admissible_pass_ = 0;
  void AddAdmissibleArcs(uint32_t u);
  // RebalanceLeaf scratch: the tails of this round's changed arcs; a stamp
  // per node (== leaf_pass_: already a candidate, or placed fresh this
  // round); one node's arcs in price order.
  std::vector<uint32_t> leaf_candidates_;
  std::vector<uint32_t> leaf_stamp_;
  uint32_t leaf_pass_ = 0;
  std::vector<std::pair<int64_t, uint32_t>> leaf_arcs_;
};

}  // namespace flowsched::solver
