#include "services/solver/incremental_solver.h"

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

#include "services/common/status_macros.h"
#include "services/solver/problem_validator.h"
#include "services/solver/solution_cost.h"

namespace flowsched::solver {
namespace {

// node_count * max|cost| bounds every shortest-path distance and, after
// RecenterPotentials, the potential span. Keeping it below 2^59 and
// recentering once any |potential| passes 2^60 leaves every reduced cost and
// distance label (potential difference plus path cost) inside int64 without
// per-operation checks. Potentials drift because the partial-Dijkstra update
// moves only settled nodes (Hapi digest 1.2): down when the search grows from
// the excess nodes, up when it grows back from the deficits.
constexpr int64_t kMaxIncrementalCostSpan = int64_t{1} << 59;
constexpr int64_t kPotentialLimit = int64_t{1} << 60;
// Excesses are sums of up to degree-many capacities (<= 2^40 each); a node
// beyond 2^62 cannot be represented safely and makes Solve fail.
constexpr int64_t kMaxIncrementalExcess = int64_t{1} << 62;
// SearchSide::kAuto grows a Dijkstra backwards once the excess nodes
// outnumber the deficit nodes this many times, or their residual arcs the
// deficits' arcs. Chosen on the 12,500-machine Quincy simulation at 1x,
// where growing backwards cut the placement latency of job arrivals (the
// figures for each ratio were not kept; docs/2026-11-27-solver-measurements.md,
// IncrementalSolver step 5, "Search side", has the mechanism).
constexpr size_t kBackwardRatio = 4;
// RebalanceLeaf sorts a node's arcs; tasks have a handful (Quincy: X, U_j,
// up to ten preferences, the running arc). Larger nodes are aggregators
// with arcs in, which never qualify anyway.
constexpr size_t kLeafArcLimit = 64;
// IncrementalOptions::pair_through_sink: the entries one pairing search
// may read. Its searches on the 12,500-machine Quincy rounds read at most
// ~700; load spreading's X alone holds ~28,000 open ones.
constexpr uint64_t kPairingEntryBudget = 4096;

template <typename T>
void GrowTo(std::vector<T>& v, size_t size, const T& value) {
  if (v.size() < size) v.resize(size, value);
}

}  // namespace

IncrementalSolver::IncrementalSolver(IncrementalOptions options)
    : options_(options) {}

void IncrementalSolver::GrowNodes(uint32_t node) {
  if (node < node_limit_) return;
  const size_t needed = size_t{node} + 1;
  if (needed > node_exists_.size()) {
    // Double (Hapi allocates 2x and grows geometrically) so a stream of new
    // nodes costs amortised O(1) and no round pays for many reallocations.
    const size_t size = std::max<size_t>({needed, 2 * node_exists_.size(), 16});
    GrowTo(node_exists_, size, uint8_t{0});
    GrowTo(supply_, size, int64_t{0});
    GrowTo(excess_, size, int64_t{0});
    GrowTo(label_, size, NodeLabel{});
    adj_.resize(size);
    GrowTo(regions_, size, AdjRegions{});
    GrowTo(in_active_, size, uint8_t{0});
    GrowTo(fresh_, size, uint8_t{0});
    GrowTo(fresh_heads_left_, size, uint32_t{0});
    GrowTo(walk_, size, WalkState{});
    GrowTo(settled_stamp_, size, uint32_t{0});
    GrowTo(parent_arc_, size, kNoArc);
    GrowTo(leaf_stamp_, size, uint32_t{0});
  }
  node_limit_ = node + 1;
}

void IncrementalSolver::GrowHandles(uint32_t handle) {
  if (handle < handle_limit_) return;
  const size_t needed = size_t{handle} + 1;
  if (needed > capacity_.size()) {
    const size_t size = std::max<size_t>({needed, 2 * capacity_.size(), 16});
    arcs_.resize(2 * size);
    capacity_.resize(size, 0);
    handle_live_.resize(size, 0);
    handle_dirty_.resize(size, 0);
  }
  handle_limit_ = handle + 1;
}

void IncrementalSolver::NextPhase() {
  if (++phase_ == 0) {  // the stamps wrapped: start them over
    std::fill(settled_stamp_.begin(), settled_stamp_.end(), 0);
    phase_ = 1;
  }
}

void IncrementalSolver::NextWalkPass() {
  // A drain walk a round per imbalance wraps the counter after a few
  // million rounds; a stale stamp equal to the new pass would make a node
  // look visited.
  if (++pass_ == 0) {
    for (WalkState& w : walk_) w.pass = 0;
    pass_ = 1;
  }
}

void IncrementalSolver::MarkActive(uint32_t v) {
  if (in_active_[v] == 0) {
    in_active_[v] = 1;
    active_.push_back(v);
  }
}

void IncrementalSolver::MarkFresh(uint32_t v) {
  if (fresh_[v] == 0 && adj_[v].empty()) {
    fresh_[v] = 1;
    fresh_nodes_.push_back(v);
  }
}

void IncrementalSolver::AddExcess(uint32_t v, int64_t delta) {
  // |delta| <= 2^41 and |excess| <= 2^62 before the call, so no overflow.
  excess_[v] += delta;
  if (excess_[v] > kMaxIncrementalExcess || excess_[v] < -kMaxIncrementalExcess)
    overflow_ = true;
  if (excess_[v] != 0) MarkActive(v);
}

void IncrementalSolver::MoveFlow(uint32_t r, int64_t delta) {
  arcs_[r].residual -= delta;
  arcs_[r ^ 1u].residual += delta;
  Mirror(r);
  total_cost_ += static_cast<Int128>(delta) * arcs_[r].cost;
}

void IncrementalSolver::Mirror(uint32_t r) {
  const ResidualArc& arc = arcs_[r];
  const ResidualArc& mate = arcs_[r ^ 1u];
  AdjEntry& e = adj_[mate.head][arc.adj_pos];
  const int e_was = EntryRegion(e);
  e = AdjEntry{.cost = arc.cost,
               .residual = arc.residual,
               .mate_residual = mate.residual,
               .arc = r,
               .head = arc.head};
  if (EntryRegion(e) != e_was) misplaced_.push_back(r);
  AdjEntry& m = adj_[arc.head][mate.adj_pos];
  const int m_was = EntryRegion(m);
  m = AdjEntry{.cost = mate.cost,
               .residual = mate.residual,
               .mate_residual = arc.residual,
               .arc = r ^ 1u,
               .head = mate.head};
  if (EntryRegion(m) != m_was) misplaced_.push_back(r ^ 1u);
}

void IncrementalSolver::MoveEntry(uint32_t u, uint32_t pos, int from, int to) {
  std::vector<AdjEntry>& list = adj_[u];
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

void IncrementalSolver::PlaceMisplaced() {
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

bool IncrementalSolver::MirrorsArc(const AdjEntry& e) const {
  const ResidualArc& arc = arcs_[e.arc];
  return e.cost == arc.cost && e.residual == arc.residual &&
         e.mate_residual == arcs_[e.arc ^ 1u].residual && e.head == arc.head;
}

void IncrementalSolver::Push(uint32_t r, int64_t delta) {
  MoveFlow(r, delta);
  AddExcess(Tail(r), -delta);
  AddExcess(arcs_[r].head, delta);
}

void IncrementalSolver::Unlink(uint32_t r) {
  // Into the last region, then swap-remove: the last entry takes r's slot
  // and learns its new position.
  const uint32_t u = Tail(r);
  std::vector<AdjEntry>& list = adj_[u];
  MoveEntry(u, arcs_[r].adj_pos, PositionRegion(u, arcs_[r].adj_pos), 3);
  const uint32_t pos = arcs_[r].adj_pos;
  list[pos] = list.back();
  arcs_[list[pos].arc].adj_pos = pos;
  list.pop_back();
}

absl::Status IncrementalSolver::SetSupply(uint32_t node, int64_t supply) {
  if (node > kMaxIncrementalNodeId) {
    return absl::InvalidArgumentError(fmt::format(
        "node {} exceeds the limit {}", node, kMaxIncrementalNodeId));
  }
  if (supply > kMaxNodeSupply || supply < -kMaxNodeSupply) {
    return absl::InvalidArgumentError(
        fmt::format("node {} supply {} outside [-{}, {}]", node, supply,
                    kMaxNodeSupply, kMaxNodeSupply));
  }
  if (!NodeExists(node)) {
    GrowNodes(node);
    node_exists_[node] = 1;
    supply_[node] = 0;
    excess_[node] = 0;
    label_[node].potential = 0;
    adj_[node].clear();
    regions_[node] = AdjRegions{};
    MarkFresh(node);
    ++node_count_live_;
  }
  const int64_t delta = supply - supply_[node];
  supply_[node] = supply;
  supply_sum_ += delta;
  if (sink_known_) {
    if (node == sink_) {
      sink_known_ = supply < 0;
    } else if (supply < 0 && (sink_ == kNoNode || supply < supply_[sink_])) {
      sink_ = node;
    }
  }
  AddExcess(node, delta);
  return absl::OkStatus();
}

absl::Status IncrementalSolver::Load(const McmfProblem& problem) {
  if (node_limit_ != 0 || handle_limit_ != 0) {
    return absl::FailedPreconditionError(
        "Load needs an empty solver; use SetSupply and SetArc to change one");
  }
  if (problem.supply.size() != problem.node_count) {
    return absl::InvalidArgumentError(fmt::format(
        "{} supplies for {} nodes", problem.supply.size(), problem.node_count));
  }
  if (problem.node_count == 0) {
    return problem.arcs.empty()
               ? absl::OkStatus()
               : absl::NotFoundError("arcs in a problem without nodes");
  }
  if (problem.node_count - 1 > kMaxIncrementalNodeId ||
      problem.arcs.size() > size_t{kMaxIncrementalArcHandle} + 1) {
    return absl::InvalidArgumentError(fmt::format(
        "{} nodes and {} arcs exceed the limits {} and {}", problem.node_count,
        problem.arcs.size(), size_t{kMaxIncrementalNodeId} + 1,
        size_t{kMaxIncrementalArcHandle} + 1));
  }
  // Every arc checked first (ValidateProblem's per-arc checks, which
  // SetArc's match), so a bad one leaves the solver empty.
  for (size_t a = 0; a < problem.arcs.size(); ++a) {
    FLOWSCHED_RETURN_IF_ERROR(
        ValidateArc(problem.arcs[a], a, problem.node_count));
  }
  GrowNodes(problem.node_count - 1);
  if (!problem.arcs.empty()) {
    GrowHandles(static_cast<uint32_t>(problem.arcs.size() - 1));
  }
  // A race's loser leaves within 16,384 elements.
  const absl::Status stopped = absl::CancelledError(
      "Load stopped by its caller; the solver holds part "
      "of the problem");
  for (uint32_t v = 0; v < problem.node_count; ++v) {
    if ((v & 16383) == 16383 && Stopped()) return stopped;
    FLOWSCHED_RETURN_IF_ERROR(SetSupply(v, problem.supply[v]));
  }
  // Each list is laid out in its final regions at once (regions_): the
  // partners of arcs that enter the node with capacity, then the arcs that
  // leave it with capacity, then zero-capacity arcs either way. SetArc
  // appends and leaves the move to PlaceMisplaced, a swap per entry: on
  // the 12,500-machine simulation's first network (2.2 million arcs) that
  // load took 316-357 ms and its solve 828-855 ms; this one 122-171 and
  // 642-666 ms.
  std::vector<uint32_t> in_end(problem.node_count, 0);   // region 0
  std::vector<uint32_t> out_end(problem.node_count, 0);  // region 2
  std::vector<uint32_t> size(problem.node_count, 0);     // with region 3
  for (const McmfArc& arc : problem.arcs) {
    if (arc.capacity > 0) {
      ++in_end[arc.dst];
      ++out_end[arc.src];
    }
    ++size[arc.src];
    ++size[arc.dst];
  }
  for (uint32_t v = 0; v < problem.node_count; ++v) {
    out_end[v] += in_end[v];
    regions_[v] = AdjRegions{.end = {in_end[v], in_end[v], out_end[v]}};
    adj_[v].resize(size[v]);
    // From here on in_end, out_end and size are the next free position of
    // regions 0, 2 and 3.
    size[v] = out_end[v];
    out_end[v] = in_end[v];
    in_end[v] = 0;
  }
  dirty_handles_.reserve(problem.arcs.size());
  for (uint32_t a = 0; a < problem.arcs.size(); ++a) {
    if ((a & 16383) == 16383 && Stopped()) return stopped;
    const McmfArc& arc = problem.arcs[a];
    const bool open = arc.capacity > 0;
    const uint32_t fwd = 2 * a;
    const uint32_t rev = fwd + 1;
    const uint32_t out_pos = open ? out_end[arc.src]++ : size[arc.src]++;
    const uint32_t in_pos = open ? in_end[arc.dst]++ : size[arc.dst]++;
    arcs_[fwd] = ResidualArc{arc.capacity, arc.cost, arc.dst, out_pos};
    arcs_[rev] = ResidualArc{0, -arc.cost, arc.src, in_pos};
    adj_[arc.src][out_pos] = AdjEntry{.cost = arc.cost,
                                      .residual = arc.capacity,
                                      .mate_residual = 0,
                                      .arc = fwd,
                                      .head = arc.dst};
    adj_[arc.dst][in_pos] = AdjEntry{.cost = -arc.cost,
                                     .residual = 0,
                                     .mate_residual = arc.capacity,
                                     .arc = rev,
                                     .head = arc.src};
    capacity_[a] = arc.capacity;
    handle_live_[a] = 1;
    max_abs_cost_ =
        std::max(max_abs_cost_, arc.cost < 0 ? -arc.cost : arc.cost);
    // Reduced-cost repair waits for Solve, as after SetArc.
    handle_dirty_[a] = 1;
    dirty_handles_.push_back(a);
  }
  return absl::OkStatus();
}

absl::Status IncrementalSolver::RemoveNode(uint32_t node) {
  if (!NodeExists(node)) {
    return absl::NotFoundError(fmt::format("node {} does not exist", node));
  }
  if (!adj_[node].empty()) {
    return absl::FailedPreconditionError(
        fmt::format("node {} still has {} arc ends; remove its arcs first",
                    node, adj_[node].size()));
  }
  // Without arcs the node's excess is exactly its supply, so dropping both
  // keeps sum(excess) == sum(supply).
  supply_sum_ -= supply_[node];
  supply_[node] = 0;
  excess_[node] = 0;
  node_exists_[node] = 0;
  if (node == sink_) sink_known_ = false;
  --node_count_live_;
  return absl::OkStatus();
}

absl::Status IncrementalSolver::SetArc(uint32_t handle, uint32_t src,
                                       uint32_t dst, int64_t capacity,
                                       int64_t cost) {
  if (handle > kMaxIncrementalArcHandle) {
    return absl::InvalidArgumentError(
        fmt::format("arc handle {} exceeds the limit {}", handle,
                    kMaxIncrementalArcHandle));
  }
  if (capacity < 0 || capacity > kMaxArcCapacity) {
    return absl::InvalidArgumentError(
        fmt::format("arc {} has capacity {} outside [0, {}]", handle, capacity,
                    kMaxArcCapacity));
  }
  if (cost > kMaxArcCost || cost < -kMaxArcCost) {
    return absl::InvalidArgumentError(
        fmt::format("arc {} has cost {} outside [-{}, {}]", handle, cost,
                    kMaxArcCost, kMaxArcCost));
  }
  if (!NodeExists(src)) {
    return absl::NotFoundError(
        fmt::format("arc {} has src {} which does not exist", handle, src));
  }
  if (!NodeExists(dst)) {
    return absl::NotFoundError(
        fmt::format("arc {} has dst {} which does not exist", handle, dst));
  }
  max_abs_cost_ = std::max(max_abs_cost_, cost < 0 ? -cost : cost);
  const uint32_t fwd = 2 * handle;
  const uint32_t rev = fwd + 1;
  if (HandleLive(handle) &&
      (arcs_[fwd].head != dst || arcs_[rev].head != src)) {
    RemoveArcInternal(handle);
  }
  if (!HandleLive(handle)) {
    GrowHandles(handle);
    // An isolated node's potential is unconstrained (no residual arc
    // touches it), so one that gains its first arc is priced afresh like a
    // new node. This matters when a caller reuses node ids without
    // RemoveNode: a reused job aggregator otherwise keeps its previous
    // life's potential, its new tasks get priced against that stale value,
    // and each needs a Dijkstra phase of its own (see PlaceFreshNodes).
    MarkFresh(src);
    MarkFresh(dst);
    arcs_[fwd] = ResidualArc{capacity, cost, dst,
                             static_cast<uint32_t>(adj_[src].size())};
    adj_[src].emplace_back();
    arcs_[rev] =
        ResidualArc{0, -cost, src, static_cast<uint32_t>(adj_[dst].size())};
    adj_[dst].emplace_back();
    Mirror(fwd);
    capacity_[handle] = capacity;
    handle_live_[handle] = 1;
  } else {
    const int64_t flow = arcs_[rev].residual;
    total_cost_ += static_cast<Int128>(flow) * (cost - arcs_[fwd].cost);
    arcs_[fwd].cost = cost;
    arcs_[rev].cost = -cost;
    // Capacity below the flow: cancel the surplus at once (Hapi: x <-
    // min(x, u')); the tail keeps the units as excess, the head loses them.
    if (flow > capacity) Push(rev, flow - capacity);
    capacity_[handle] = capacity;
    arcs_[fwd].residual = capacity - arcs_[rev].residual;
    Mirror(fwd);
  }
  // Reduced-cost repair waits for Solve, after fresh nodes got potentials.
  if (handle_dirty_[handle] == 0) {
    handle_dirty_[handle] = 1;
    dirty_handles_.push_back(handle);
  }
  return absl::OkStatus();
}

absl::Status IncrementalSolver::RemoveArc(uint32_t handle) {
  if (!HandleLive(handle)) {
    return absl::NotFoundError(
        fmt::format("arc handle {} is not live", handle));
  }
  RemoveArcInternal(handle);
  return absl::OkStatus();
}

void IncrementalSolver::RemoveArcInternal(uint32_t handle) {
  const uint32_t fwd = 2 * handle;
  const uint32_t rev = fwd + 1;
  // Cancel the flow: the tail keeps it as excess, the head is left short.
  if (arcs_[rev].residual > 0) Push(rev, arcs_[rev].residual);
  Unlink(fwd);
  Unlink(rev);
  handle_live_[handle] = 0;
  capacity_[handle] = 0;
}

absl::Status IncrementalSolver::InstallSolution(
    const std::vector<int64_t>& flow, const std::vector<int64_t>& potentials) {
  if (flow.size() < handle_limit_ || potentials.size() < node_limit_) {
    return absl::InvalidArgumentError(fmt::format(
        "solution covers {} handles and {} nodes; the network has {} and {}",
        flow.size(), potentials.size(), handle_limit_, node_limit_));
  }
  // Validate everything before touching any state.
  std::vector<Int128> balance(node_limit_, 0);
  Int128 cost = 0;
  for (uint32_t h = 0; h < handle_limit_; ++h) {
    if (!HandleLive(h)) continue;
    const uint32_t u = Tail(2 * h), v = arcs_[2 * h].head;
    const int64_t f = flow[h];
    if (f < 0 || f > capacity_[h]) {
      return absl::InvalidArgumentError(fmt::format(
          "handle {}: flow {} outside [0, {}]", h, f, capacity_[h]));
    }
    // Published potentials p: rc = cost - p[u] + p[v].
    const Int128 rc = Int128{arcs_[2 * h].cost} - potentials[u] + potentials[v];
    if ((f < capacity_[h] && rc < 0) || (f > 0 && rc > 0)) {
      return absl::InvalidArgumentError(fmt::format(
          "handle {}: flow {} of {} violates complementary slackness", h, f,
          capacity_[h]));
    }
    balance[u] -= f;
    balance[v] += f;
    cost += Int128{f} * arcs_[2 * h].cost;
  }
  for (uint32_t v = 0; v < node_limit_; ++v) {
    if (NodeExists(v) && balance[v] + supply_[v] != 0) {
      return absl::InvalidArgumentError(
          fmt::format("node {}: flow does not balance its supply", v));
    }
  }
  for (uint32_t h = 0; h < handle_limit_; ++h) {
    if (!HandleLive(h)) continue;
    arcs_[2 * h].residual = capacity_[h] - flow[h];
    arcs_[2 * h + 1].residual = flow[h];
    Mirror(2 * h);
    handle_dirty_[h] = 0;
  }
  dirty_handles_.clear();
  PlaceMisplaced();            // here, not in the next round's first search
  misplaced_.shrink_to_fit();  // every arc was listed; rounds list few
  for (uint32_t v = 0; v < node_limit_; ++v) {
    label_[v].potential = NodeExists(v) ? -potentials[v] : 0;
    excess_[v] = 0;
    in_active_[v] = 0;
    fresh_[v] = 0;
  }
  active_.clear();
  fresh_nodes_.clear();
  total_cost_ = cost;
  last_outcome_ = McmfOutcome::kOptimal;
  return absl::OkStatus();
}

int64_t IncrementalSolver::flow(uint32_t handle) const {
  return HandleLive(handle) ? arcs_[2 * handle + 1].residual : 0;
}

int64_t IncrementalSolver::potential(uint32_t node) const {
  return NodeExists(node) ? -label_[node].potential : 0;
}

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
  // every such task needs a Dijkstra phase of its own (profiled: ~700 phases
  // over the 12,500-machine load-spreading round). The order is Kahn's
  // (each node counts its fresh heads; placing a node releases its fresh
  // tails), O(n + m): repeated passes over the pending nodes, as before
  // 2026-11-25, took one pass per node of a chain of fresh nodes, and the
  // 200,000-node path of a DIMACS file loaded at once did not finish in
  // two minutes. Nodes on a cycle of fresh nodes (or behind one) are placed
  // last, in arrival order, against whatever their heads hold then.
  std::vector<uint32_t>& pending = fresh_nodes_;
  fresh_ready_.clear();
  for (const uint32_t v : pending) {
    if (fresh_[v] == 0 || !NodeExists(v)) {
      fresh_[v] = 0;
      continue;
    }
    uint32_t heads = 0;
    for (const AdjEntry& arc : adj_[v]) {
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
    for (const AdjEntry& arc : adj_[v]) {
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
  for (const AdjEntry& arc : adj_[v]) {
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
  if (rc < 0 && arcs_[fwd].residual > 0) {
    Push(fwd, arcs_[fwd].residual);
    ++stats.arcs_repaired;
  } else if (rc > 0 && arcs_[fwd + 1].residual > 0) {
    Push(fwd + 1, arcs_[fwd + 1].residual);
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
  const std::vector<AdjEntry>& list = adj_[u];
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
    const int64_t flow = arcs_[r ^ 1u].residual;
    const int64_t target = std::min(left, flow + arcs_[r].residual);
    left -= target;
    if (target > 0) price_key = key;
    if (target == flow) continue;
    MoveFlow(r, target - flow);
    AddExcess(arcs_[r].head, target - flow);
    AddExcess(u, flow - target);
    ++stats.arcs_repaired;
  }
  // Units beyond the capacity of every arc stay at u as excess; every arc
  // is full then and pi[u] = -(largest key) keeps all their rc <= 0.
  if (left > 0) price_key = leaf_arcs_.back().first;
  label_[u].potential = -price_key;
  if (-price_key > kPotentialLimit || -price_key < -kPotentialLimit) {
    recenter_needed_ = true;
  }
}

void IncrementalSolver::TouchForDfs(uint32_t v) {
  if (walk_[v].pass != pass_) {
    walk_[v].pass = pass_;
    walk_[v].current_arc = 0;
    walk_[v].state = kFresh;
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
    return forward ? arcs_[q].head : Tail(q);
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
      for (uint32_t q : path_) delta = std::min(delta, arcs_[q].residual);
      for (uint32_t q : path_) MoveFlow(q, delta);
      AddExcess(u, forward ? delta : -delta);
      AddExcess(root, forward ? -delta : delta);
      ++stats.augmentations;
      stats.drained_units += delta;
      moved = true;
      for (size_t k = 0; k < path_.size(); ++k) {
        if (arcs_[path_[k]].residual != 0) continue;
        for (size_t j = k; j < path_.size(); ++j) {
          walk_[far_end(path_[j])].state = kFresh;
        }
        path_.resize(k);
        u = path_.empty() ? root : far_end(path_.back());
        break;
      }
      continue;
    }
    const std::vector<AdjEntry>& list = adj_[u];
    const auto end = static_cast<uint32_t>(list.size());
    bool advanced = false;
    for (uint32_t i = walk_[u].current_arc; i < end && budget > 0;
         ++i, --budget) {
      const AdjEntry& e = list[i];
      assert(MirrorsArc(e));
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

int64_t IncrementalSolver::ShortestDistances(int64_t total, bool backward,
                                             IncrementalStats& stats) {
  // Multi-root Dijkstra on reduced costs (non-negative by the invariant)
  // with a lazily filled binary heap (Hapi digest 1.2: binary heap, small
  // heap, partial Dijkstra). Ties break by node index for determinism.
  // Backward, a node's label is its distance *to* the nearest deficit: the
  // residual arc into u is the partner r ^ 1 of each r in adj_[u], and its
  // reduced cost is -ReducedCost(r).
  const auto start = std::chrono::steady_clock::now();
  uint64_t entries = 0;
  PlaceMisplaced();
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
  // of a job's tasks is settled after the nodes of lower id): the 1,854-
  // task job of the 12,500-machine simulation at --seed 2 then moved ~13
  // units a phase, a hundred phases of ~4.5 ms. The first search stops at
  // coverage: most rounds end in it (load spreading, whose plateau of
  // 12,500 machines at distance 0 the level would add: p50 9 -> 22 ms).
  // So does a search for one unit, which its tree path routes (--seed 1:
  // the level added up to 4,000 nodes to such searches).
  const bool finish_level = stats.dijkstra_runs > 0 && total > 1;
  ++stats.dijkstra_runs;
  if (backward) ++stats.backward_runs;
  NextPhase();
  int64_t covered = 0;
  int64_t last = kInfinity;
  // Once the other-side nodes reached so far (at tentative distances up to
  // reach_max) cover `total`, the search stops at or before distance
  // reach_max, so a label above it is never settled and need not enter the
  // heap. At 12,500 machines this skips most of the 150,000 running tasks a
  // machine or aggregator would otherwise push (profiled: 5,000 nodes
  // settled, 150,000 pushed).
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
  // cheaper than one of (distance, id) pairs
  // (incremental_profile ls 12500: p50 14.3-15.1 -> 13.4-13.7 ms). A FIFO
  // for the level was cheaper still but settled other nodes among equals,
  // and its blocking flows then routed less: 3 searches instead of 1 in
  // some load-spreading rounds.
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
      __builtin_prefetch(adj_[level_queue_.front()].data());
    }
    // Only the entries with a residual arc on the search's side (regions_).
    const AdjEntry* const list = adj_[u].data();
    const auto [scan_begin, scan_end] = SearchRange(u, backward);
    entries += scan_end - scan_begin;
    for (uint32_t i = scan_begin; i < scan_end; ++i) {
      const AdjEntry& arc = list[i];
      assert(MirrorsArc(arc));
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
        __builtin_prefetch(&adj_[w]);
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
    l.potential += backward ? bound - l.dist : l.dist - bound;
    if (l.potential < -kPotentialLimit || l.potential > kPotentialLimit) {
      recenter_needed_ = true;
    }
  }
  for (uint32_t v : touched_) label_[v].dist = kInfinity;
  settled_.clear();
  touched_.clear();
}

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
  const uint64_t budget = uint64_t{handle_limit_} + kPairingEntryBudget;
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

int64_t IncrementalSolver::PairUnits(uint32_t root, bool backward,
                                     uint64_t& entries, SearchRecord& record,
                                     IncrementalStats& stats) {
  // Dijkstra from one root, on a binary heap of (distance, node): a search
  // here settles a few dozen nodes, where the global search's radix heap
  // and level queue would cost more to set up than they save.
  PlaceMisplaced();
  NextPhase();
  pair_heap_.clear();
  // Backward, the root lacks units: the sink lends them, or an excess node
  // gives them. Forward, the root has units for any deficit, the sink's
  // included once it has lent.
  // The sink lends without limit otherwise; an excess near the int64
  // bound would make the round fail with OutOfRange (AddExcess).
  const bool sink_lends =
      sink_ != kNoNode && excess_[sink_] > -kMaxIncrementalExcess / 2;
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
  uint64_t read = 0;
  uint32_t target = kNoNode;
  int64_t bound = 0;
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
    const auto [scan_begin, scan_end] = SearchRange(u, backward);
    // A hub (load spreading's X, with an arc per machine and slot) would
    // cost every unit a read of its whole list: leave the unit to the
    // global phases, which read it once for all.
    if (read + (scan_end - scan_begin) > kPairingEntryBudget) break;
    read += scan_end - scan_begin;
    settled_.push_back(u);
    settled_stamp_[u] = phase_;
    const int64_t pu = label_[u].potential;
    const AdjEntry* const list = adj_[u].data();
    for (uint32_t i = scan_begin; i < scan_end; ++i) {
      const AdjEntry& arc = list[i];
      assert(MirrorsArc(arc));
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

std::pair<uint32_t, uint32_t> IncrementalSolver::SearchRange(
    uint32_t u, bool backward) const {
  const AdjRegions& regions = regions_[u];
  assert(RegionsHold(u));
  return backward ? std::pair{uint32_t{0}, regions.end[1]}
                  : std::pair{regions.end[0], regions.end[2]};
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
    if (arcs_[a].residual == 0 || path_.size() >= node_limit_) return kNoNode;
    delta = std::min(delta, arcs_[a].residual);
    path_.push_back(a);
    v = backward ? arcs_[a].head : Tail(a);
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

bool IncrementalSolver::BlockingFlow(IncrementalStats& stats) {
  // A maximum flow from the excess nodes to the deficit nodes over the
  // admissible network of the phase's last search: arcs with residual
  // capacity and zero reduced cost into nodes it settled (they hold every
  // shortest path it found, so this costs about what the search did
  // instead of wandering the often huge zero-cost subgraph). It is the shortest
  // augmenting path algorithm with exact distance labels (Ahuja and Orlin,
  // Naval Research Logistics 1991): one backward BFS from the deficits
  // gives each node its hop distance to the nearest one; a root advances
  // along arcs that step one hop closer, augments at a deficit, and a node
  // with no such arc is relabelled to one more than its best neighbour's
  // label. The labels stay valid lower bounds through augmentations, so
  // the network is walked about once. Dinic's algorithm, which it
  // replaced, rebuilt its level graph by a BFS per stage, 8-20 stages of
  // 11,000-45,000 nodes a phase in 12,500-machine Quincy rounds (~40% of
  // their time). A label that no node holds any more (a gap) cuts every
  // node above it off from the deficits for good: a node's residual arcs
  // lower its label by at most one each, and augmentations only add arcs
  // between nodes below the gap.
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
  // Backward BFS over admissible arcs, from the deficits the search
  // settled. An arc u -> w is admissible when w was settled and its
  // reduced cost is zero; u is settled too or an excess node (a root).
  PlaceMisplaced();  // after the tree paths' pushes; lists stay put below
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
    const AdjEntry* const list = adj_[w].data();
    for (uint32_t k = 0, end = regions_[w].end[1]; k < end; ++k) {
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
  // Labels above `gap` are cut off, and kNoLevel means never reached.
  // (A node relabelled to `gap` itself afterwards steps to a live node
  // below it, so it lives.)
  constexpr uint32_t kNoLevel = std::numeric_limits<uint32_t>::max();
  uint32_t gap = kNoLevel - 1;
  const auto live = [&gap](uint32_t level) { return level <= gap; };
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
    path_.clear();
    uint32_t u = root;
    while (excess_[root] > 0 && live(walk_[root].level)) {
      if (u != root && excess_[u] < 0) {
        int64_t delta = std::min(excess_[root], -excess_[u]);
        for (uint32_t a : path_) delta = std::min(delta, arcs_[a].residual);
        for (uint32_t a : path_) MoveFlow(a, delta);
        AddExcess(root, -delta);
        AddExcess(u, delta);
        ++stats.augmentations;
        moved = true;
        // Retreat to the tail of the first saturated arc; if none, the
        // deficit or the root is used up and the loop moves on.
        for (size_t k = 0; k < path_.size(); ++k) {
          if (arcs_[path_[k]].residual != 0) continue;
          path_.resize(k);
          break;
        }
        u = path_.empty() ? root : arcs_[path_.back()].head;
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
        if (level != 0 && walk_[w].pass == pass_ &&
            walk_[w].level == level - 1 && live(walk_[w].level) &&
            arcs_[a].residual != 0) {
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
            arcs_[a].residual != 0) {
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
      u = path_.empty() ? root : arcs_[path_.back()].head;
    }
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

void IncrementalSolver::AddAdmissibleArcs(uint32_t u) {
  if (walk_[u].admissible_stamp == admissible_pass_) return;
  walk_[u].admissible_stamp = admissible_pass_;
  walk_[u].admissible_begin = static_cast<uint32_t>(admissible_.size());
  const int64_t pu = label_[u].potential;
  for (const AdjEntry& e : adj_[u]) {
    assert(MirrorsArc(e));
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

absl::StatusOr<IncrementalResult> IncrementalSolver::Solve() {
  const auto start = std::chrono::steady_clock::now();
  if (overflow_) {
    return absl::OutOfRangeError(
        "a node's excess left [-2^62, 2^62]; rebuild the solver");
  }
  if (supply_sum_ != 0) {
    return absl::InvalidArgumentError(
        fmt::format("supplies sum to {} instead of 0",
                    static_cast<long long>(supply_sum_)));
  }
  if (static_cast<Int128>(max_abs_cost_) * (Int128{node_limit_} + 1) >
      kMaxIncrementalCostSpan) {
    return absl::OutOfRangeError(fmt::format(
        "node_count {} times max |cost| {} exceeds 2^59; potentials could "
        "overflow int64",
        node_limit_, max_abs_cost_));
  }
  IncrementalResult result;
  IncrementalStats& stats = result.stats;

  if (Stopped()) {
    return absl::CancelledError("incremental solve stopped by its caller");
  }
  ApplyPendingRepairs(stats);
  if (recenter_needed_) RecenterPotentials();
  Drain(stats);
  stopped_ = false;
  if (options_.pair_through_sink) PairThroughSink(stats);

  McmfOutcome outcome = McmfOutcome::kOptimal;
  while (true) {
    // Compact the active list and collect the sources.
    sources_.clear();
    deficits_.clear();
    Int128 total_excess = 0;
    size_t source_arcs = 0;
    size_t deficit_arcs = 0;
    size_t kept = 0;
    for (uint32_t v : active_) {
      if (!NodeExists(v) || excess_[v] == 0) {
        in_active_[v] = 0;
        continue;
      }
      active_[kept++] = v;
      if (excess_[v] > 0) {
        sources_.push_back(v);
        total_excess += excess_[v];
        source_arcs += adj_[v].size();
      } else {
        deficits_.push_back(v);
        deficit_arcs += adj_[v].size();
      }
    }
    active_.resize(kept);
    if (overflow_) {
      return absl::OutOfRangeError(
          "a node's excess left [-2^62, 2^62]; rebuild the solver");
    }
    if (sources_.empty()) break;
    if (Stopped()) {
      return absl::CancelledError("incremental solve stopped by its caller");
    }
    // Backward pays when many excess nodes face few deficits: a job of new
    // tasks facing the sink, each task at its own distance from it. It also
    // pays when the excess sits on a hub and the deficits do not: a task
    // that finished on a full machine leaves the sink (adjacent to every
    // machine) with a unit the machine lacks, and when the machine's
    // return arc is not at reduced cost zero, a search from the sink
    // settles the whole zero-cost plateau of running tasks before it (all
    // 150,000 nodes at 12,500 machines, ~50 ms), one from the machine a
    // handful. A lone excess node left after the first search is priced
    // by either side's search alone (it is its own nearest root), and in
    // a Quincy round the last unit's backward search settled 7,000-14,000
    // nodes where the two-sided pair settled those and 7,000-70,000 more.
    // Forward stays the default otherwise (finished tasks drained
    // elsewhere, machine failures, cost changes).
    const bool backward =
        options_.search_side == IncrementalOptions::SearchSide::kAuto &&
        (deficits_.size() * kBackwardRatio <= sources_.size() ||
         deficit_arcs * kBackwardRatio <= source_arcs ||
         (sources_.size() == 1 && stats.dijkstra_runs > 0));
    if (!backward && options_.two_sided_search && stats.dijkstra_runs > 0) {
      // IncrementalOptions::two_sided_search: price every excess node by
      // its own distance to the deficits first, so that the forward search
      // below leaves an admissible path from each of them, not only from
      // those as close as the nearest one.
      const int64_t backward_bound = ShortestDistances(
          static_cast<int64_t>(std::min<Int128>(total_excess, kInfinity)),
          /*backward=*/true, stats);
      if (stopped_) break;
      if (backward_bound != kInfinity) {
        UpdatePotentials(backward_bound, /*backward=*/true);
      }
    }
    const int64_t bound = ShortestDistances(
        static_cast<int64_t>(std::min<Int128>(total_excess, kInfinity)),
        backward, stats);
    if (stopped_) break;
    if (bound == kInfinity) {
      // No deficit is reachable from any excess: the pseudoflow still
      // satisfies rc >= 0 everywhere, so the state stays consistent and the
      // remaining imbalances carry over to the next Solve.
      outcome = McmfOutcome::kInfeasible;
      break;
    }
    UpdatePotentials(bound, backward);
    const bool tree_moved = AugmentTreePaths(backward, stats);
    const bool flowed = BlockingFlow(stats);
    if (stopped_) break;
    if (!flowed && !tree_moved) {
      // Dijkstra just proved a zero-reduced-cost path to a deficit exists:
      // the tree holds it, and if a tree path was closed the blocking
      // flow's labels reach its root along the tree's arcs.
      return absl::InternalError("incremental: blocking flow made no progress");
    }
  }
  if (stopped_) {
    return absl::CancelledError("incremental solve stopped by its caller");
  }
  if (recenter_needed_) RecenterPotentials();
  // A round without imbalance runs no search; placing here keeps the list
  // to about one round's changes (an error return above skips it; the next
  // search places them).
  PlaceMisplaced();
  last_outcome_ = outcome;
  result.outcome = outcome;
  if (outcome == McmfOutcome::kOptimal) {
    FLOWSCHED_ASSIGN_OR_RETURN(result.total_cost,
                               CheckedTotalCost(total_cost_));
  }
  stats.solve_ms = std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  return result;
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
    for (const AdjEntry& arc : adj_[u]) {
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
  for (uint32_t v = 0; v < node_limit_; ++v) {
    if (NodeExists(v))
      label_[v].potential = dist[v] - top + label_[v].potential;
  }
}

void IncrementalSolver::Export(McmfProblem& problem, McmfSolution& solution,
                               std::vector<uint32_t>& arc_handles) const {
  problem.node_count = node_limit_;
  problem.supply.assign(node_limit_, 0);
  for (uint32_t v = 0; v < node_limit_; ++v) {
    if (NodeExists(v)) problem.supply[v] = supply_[v];
  }
  // Cleared, not reassigned, so a caller's buffers keep their capacity.
  solution.flow.clear();
  solution.potentials.clear();
  solution.total_cost = 0;
  solution.algorithm = "incremental";
  solution.outcome = last_outcome_;
  const bool with_flow = last_outcome_ == McmfOutcome::kOptimal;
  // One pass over the residual arcs for arcs and flow: at 1.5 million
  // handles they are 72 MB, and a second pass for the flow cost as much as
  // the first.
  problem.arcs.clear();
  arc_handles.clear();
  Int128 total = 0;
  for (uint32_t h = 0; h < handle_limit_; ++h) {
    if (handle_live_[h] == 0) continue;
    const ResidualArc& forward = arcs_[2 * h];
    const ResidualArc& reverse = arcs_[2 * h + 1];
    problem.arcs.push_back(McmfArc{.src = reverse.head,
                                   .dst = forward.head,
                                   .capacity = capacity_[h],
                                   .cost = forward.cost});
    arc_handles.push_back(h);
    if (with_flow) {
      solution.flow.push_back(reverse.residual);
      total += static_cast<Int128>(reverse.residual) * forward.cost;
    }
  }
  if (!with_flow) return;
  solution.total_cost = static_cast<int64_t>(total);
  solution.potentials.assign(node_limit_, 0);
  for (uint32_t v = 0; v < node_limit_; ++v) {
    if (NodeExists(v)) solution.potentials[v] = -label_[v].potential;
  }
}

}  // namespace flowsched::solver
