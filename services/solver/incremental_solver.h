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
#include "services/solver/incremental_options.h"
#include "services/solver/incremental_residual_graph.h"
#include "services/solver/int128.h"
#include "services/solver/mcmf_problem.h"
#include "services/solver/radix_heap.h"

namespace flowsched::solver {

// Node ids and arc handles index arrays, and each handle owns residual arcs
// 2h and 2h + 1 (uint32), so both stay below 2^31.
inline constexpr uint32_t kMaxIncrementalNodeId = (uint32_t{1} << 31) - 2;
inline constexpr uint32_t kMaxIncrementalArcHandle = (uint32_t{1} << 31) - 2;

// The value checks of IncrementalSolver::SetSupply and SetArc (ids within
// the limits, supply, capacity and cost within ValidateProblem's bounds),
// shared with IncrementalCertificate, which takes the same changes.
absl::Status ValidateSupplyChange(uint32_t node, int64_t supply);
absl::Status ValidateArcChange(uint32_t handle, int64_t capacity, int64_t cost);

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
    for (uint32_t h = 0; h < graph_.handle_limit(); ++h) {
      const int64_t units = graph_.arc(2 * h + 1).residual;
      if (units != 0 && graph_.HandleLive(h)) f(h, units);
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

  // What the solver changed in its solution since the last TakeChanges:
  // handles whose flow and nodes whose potential may differ (a superset,
  // each listed once), or `everything` after a step that rewrote them all
  // (Load, InstallSolution, RecenterPotentials). For a checker that keeps
  // its own copy of the solution (IncrementalCertificate): it reads only
  // these, and its soundness does not depend on the list being complete.
  struct SolutionChanges {
    bool everything = false;
    std::vector<uint32_t> handles;
    std::vector<uint32_t> nodes;
  };
  // Moves the changes into `out` (its buffers are reused) and starts a new
  // list.
  void TakeChanges(SolutionChanges& out);

  // Cooperative cancellation for a portfolio race: Solve checks the flag
  // between Dijkstra phases, every 4,096 nodes a search settles, every 64
  // roots of a blocking flow, every 256 drain walks and every 64 pairing
  // searches (the first of each pass included), and returns
  // Cancelled, leaving a consistent pseudoflow (like an infeasible round)
  // that InstallSolution or a later Solve can continue from. (Checking
  // only between phases would hold a portfolio's join for a whole phase.)
  void set_stop_flag(const std::atomic<bool>* stop) { stop_ = stop; }

 private:
  using AdjEntry = IncrementalResidualGraph::Entry;

  static constexpr int64_t kInfinity = INT64_MAX;
  // node_count * max|cost| bounds every shortest-path distance and, after
  // RecenterPotentials, the potential span. Keeping it below 2^59 and
  // recentering once any |potential| passes 2^60 keeps every reduced cost
  // and distance label inside int64 without per-operation checks.
  // Potentials drift because the partial-Dijkstra update moves only settled
  // nodes (Hapi digest 1.2).
  static constexpr int64_t kMaxCostSpan = int64_t{1} << 59;
  static constexpr int64_t kPotentialLimit = int64_t{1} << 60;
  // Excesses are sums of up to degree-many capacities (<= 2^40 each); a
  // node beyond 2^62 makes Solve fail with OutOfRange.
  static constexpr int64_t kMaxExcess = int64_t{1} << 62;
  // SearchSide::kAuto grows a Dijkstra backwards once the excess nodes
  // outnumber the deficit nodes this many times, or their residual arcs the
  // deficits' arcs.
  static constexpr size_t kBackwardRatio = 4;
  // RebalanceLeaf skips nodes with more arcs (aggregators, which have arcs
  // in and never qualify anyway; tasks have a handful).
  static constexpr size_t kLeafArcLimit = 64;
  // IncrementalOptions::pair_through_sink: the entries one pairing search
  // may read before it leaves its unit to the global phases.
  static constexpr uint64_t kPairingEntryBudget = 4096;
  // No node: above every id (kMaxIncrementalNodeId).
  static constexpr uint32_t kNoNode = std::numeric_limits<uint32_t>::max();

  bool NodeExists(uint32_t v) const {
    return v < node_limit_ && node_exists_[v] != 0;
  }
  bool HandleLive(uint32_t h) const { return graph_.HandleLive(h); }
  uint32_t Tail(uint32_t r) const { return graph_.Tail(r); }
  int64_t ReducedCost(uint32_t r) const {
    const IncrementalResidualGraph::Arc& arc = graph_.arc(r);
    return arc.cost + label_[graph_.Tail(r)].potential -
           label_[arc.head].potential;
  }

  // Makes node ids up to `node` (handles up to `handle`) addressable,
  // growing every per-node (per-handle) array geometrically.
  void GrowNodes(uint32_t node);
  void GrowHandles(uint32_t handle);
  void AddExcess(uint32_t v, int64_t delta) {
    // |delta| <= 2^41 and |excess| <= 2^62 before the call: no overflow.
    excess_[v] += delta;
    if (excess_[v] > kMaxExcess || excess_[v] < -kMaxExcess) overflow_ = true;
    if (excess_[v] != 0) MarkActive(v);
  }
  void MarkActive(uint32_t v) {
    if (in_active_[v] == 0) {
      in_active_[v] = 1;
      active_.push_back(v);
    }
  }
  // Queues v for PlaceFreshNodes if it has no arcs (new or isolated).
  void MarkFresh(uint32_t v);
  // Moves `delta` units onto residual arc r (and off its partner), and
  // from r's tail's excess to its head's.
  void Push(uint32_t r, int64_t delta) {
    MoveFlow(r, delta);
    AddExcess(Tail(r), -delta);
    AddExcess(graph_.arc(r).head, delta);
  }
  // Moves flow along residual arc r without touching excesses (path
  // interiors, whose net excess change is zero).
  void MoveFlow(uint32_t r, int64_t delta) {
    LogFlowChange(r >> 1);
    graph_.MoveResidual(r, delta);
    total_cost_ += static_cast<Int128>(delta) * graph_.arc(r).cost;
  }
  // Cancels the handle's flow (an imbalance at its ends), then removes it.
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
  // PairUnits' search: Dijkstra from `root` until it settles a partner
  // (returned, its distance in `bound`) or would read more than
  // kPairingEntryBudget entries (kNoNode). Leaves the labels and the tree
  // for UpdatePotentials and TreePath; adds the entries it read to `read`.
  uint32_t NearestPartner(uint32_t root, bool backward, uint64_t& read,
                          int64_t& bound);
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
  // BlockingFlow's backward BFS: walk_[v].level = hops from v to the
  // nearest deficit over admissible arcs, for the nodes it reaches
  // (bfs_queue_); label_count_ counts each label.
  void LabelHopDistances();
  // BlockingFlow from one root until it has no units left or its label
  // is cut off above `gap` (lowered when a label empties); returns true if
  // it moved flow.
  bool RouteFromRoot(uint32_t root, uint32_t& gap, IncrementalStats& stats);
  // BlockingFlow's label of a node it never reached.
  static constexpr uint32_t kNoLevel = std::numeric_limits<uint32_t>::max();
  void TouchForDfs(uint32_t v) {
    if (walk_[v].pass != pass_) {
      walk_[v].pass = pass_;
      walk_[v].current_arc = 0;
      walk_[v].state = kFresh;
    }
  }
  // The imbalances of one phase: compacts active_ and lists its excess
  // nodes in sources_ and deficit nodes in deficits_.
  struct Imbalances {
    Int128 total_excess = 0;
    size_t source_arcs = 0;   // entries of the excess nodes
    size_t deficit_arcs = 0;  // entries of the deficit nodes
  };
  Imbalances CollectImbalances();
  // Solve's preconditions: no excess overflowed, supplies sum to zero and
  // node_count * max|cost| stays below kMaxCostSpan.
  absl::Status CheckSolvable() const;
  // One phase: a search (two-sided when IncrementalOptions asks), its
  // potential update, and augmentation along its tree and by a blocking
  // flow. Internal if a phase moved nothing (a broken invariant).
  enum class PhaseEnd { kProgress, kInfeasible, kStopped };
  absl::StatusOr<PhaseEnd> RunPhase(const Imbalances& imbalances,
                                    IncrementalStats& stats);
  // Whether this phase's search grows from the deficits
  // (IncrementalOptions::search_side).
  bool SearchBackward(const Imbalances& imbalances,
                      const IncrementalStats& stats) const;

  // The change log TakeChanges hands out.
  void LogFlowChange(uint32_t handle) {
    if (changes_.everything || flow_logged_[handle] != 0) return;
    flow_logged_[handle] = 1;
    changes_.handles.push_back(handle);
  }
  void LogPotentialChange(uint32_t v) {
    if (changes_.everything || potential_logged_[v] != 0) return;
    potential_logged_[v] = 1;
    changes_.nodes.push_back(v);
  }
  void LogEverythingChanged();

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

  // Arcs, their flow and the adjacency lists the searches scan.
  IncrementalResidualGraph graph_;
  // Handles changed since the last Solve, whose reduced cost it repairs.
  std::vector<uint8_t> handle_dirty_;
  std::vector<uint32_t> dirty_handles_;
  int64_t max_abs_cost_ = 0;  // over every cost ever set; monotone

  Int128 total_cost_ = 0;  // sum cost * flow, kept up to date by Push
  // TakeChanges' log; the flags mark what it lists.
  SolutionChanges changes_;
  std::vector<uint8_t> flow_logged_;       // per handle
  std::vector<uint8_t> potential_logged_;  // per node
  bool overflow_ = false;                  // an excess left [-2^62, 2^62]
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
  // the excess nodes' reach.
  bool InLastSearch(uint32_t v) const { return settled_stamp_[v] == phase_; }

  // DFS scratch; stamps avoid O(n) resets.
  enum : uint8_t { kFresh = 0, kOnPath = 1, kDead = 2 };
  uint32_t pass_ = 0;
  // A node's state in the drain walks and blocking flows, in one struct:
  // a BFS or DFS step into a node reads several fields (a cache miss each
  // as separate arrays).
  struct WalkState {
    uint32_t pass = 0;
    // Index into v's entries (drain walks) or v's admissible entries
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
  // node's entries at zero reduced cost into a node the phase's
  // last search settled and the flow's BFS labelled, in adjacency order
  // (residual capacity is tested at use: augmentations open and close
  // arcs, while potentials, stamps and the labelled set stay fixed), so
  // that a hub's list is scanned once a phase, not at every step.
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
