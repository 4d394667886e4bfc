// IncrementalSolver: the network's changes (supplies, arcs, loads and
// installed solutions), the round driver Solve() and Export. The repair,
// drain, search, pairing and blocking-flow steps live in the
// incremental_*.cc files beside it.

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
    graph_.ResizeNodes(size);
    GrowTo(in_active_, size, uint8_t{0});
    GrowTo(fresh_, size, uint8_t{0});
    GrowTo(fresh_heads_left_, size, uint32_t{0});
    GrowTo(walk_, size, WalkState{});
    GrowTo(settled_stamp_, size, uint32_t{0});
    GrowTo(parent_arc_, size, kNoArc);
    GrowTo(leaf_stamp_, size, uint32_t{0});
    GrowTo(potential_logged_, size, uint8_t{0});
  }
  node_limit_ = node + 1;
}

void IncrementalSolver::GrowHandles(uint32_t handle) {
  graph_.GrowHandles(handle);
  if (handle >= handle_dirty_.size()) {
    handle_dirty_.resize(
        std::max<size_t>({size_t{handle} + 1, 2 * handle_dirty_.size(), 16}),
        0);
    flow_logged_.resize(handle_dirty_.size(), 0);
  }
}

void IncrementalSolver::LogEverythingChanged() {
  for (uint32_t h : changes_.handles) flow_logged_[h] = 0;
  for (uint32_t v : changes_.nodes) potential_logged_[v] = 0;
  changes_.handles.clear();
  changes_.nodes.clear();
  changes_.everything = true;
}

void IncrementalSolver::TakeChanges(SolutionChanges& out) {
  for (uint32_t h : changes_.handles) flow_logged_[h] = 0;
  for (uint32_t v : changes_.nodes) potential_logged_[v] = 0;
  out.everything = changes_.everything;
  out.handles.swap(changes_.handles);
  out.nodes.swap(changes_.nodes);
  changes_.handles.clear();
  changes_.nodes.clear();
  changes_.everything = false;
}

void IncrementalSolver::MarkFresh(uint32_t v) {
  if (fresh_[v] == 0 && graph_.entries(v).empty()) {
    fresh_[v] = 1;
    fresh_nodes_.push_back(v);
  }
}

absl::Status ValidateSupplyChange(uint32_t node, int64_t supply) {
  if (node > kMaxIncrementalNodeId) {
    return absl::InvalidArgumentError(fmt::format(
        "node {} exceeds the limit {}", node, kMaxIncrementalNodeId));
  }
  if (supply > kMaxNodeSupply || supply < -kMaxNodeSupply) {
    return absl::InvalidArgumentError(
        fmt::format("node {} supply {} outside [-{}, {}]", node, supply,
                    kMaxNodeSupply, kMaxNodeSupply));
  }
  return absl::OkStatus();
}

absl::Status ValidateArcChange(uint32_t handle, int64_t capacity,
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
  return absl::OkStatus();
}

absl::Status IncrementalSolver::SetSupply(uint32_t node, int64_t supply) {
  FLOWSCHED_RETURN_IF_ERROR(ValidateSupplyChange(node, supply));
  if (!NodeExists(node)) {
    GrowNodes(node);
    node_exists_[node] = 1;
    supply_[node] = 0;
    excess_[node] = 0;
    label_[node].potential = 0;
    LogPotentialChange(node);
    graph_.ClearNode(node);
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
  if (node_limit_ != 0 || graph_.handle_limit() != 0) {
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
  FLOWSCHED_RETURN_IF_ERROR(ValidateArcs(problem.arcs, problem.node_count));
  GrowNodes(problem.node_count - 1);
  LogEverythingChanged();
  // A race's loser leaves within 16,384 elements.
  const absl::Status stopped = absl::CancelledError(
      "Load stopped by its caller; the solver holds part "
      "of the problem");
  for (uint32_t v = 0; v < problem.node_count; ++v) {
    if ((v & 16383) == 16383 && Stopped()) return stopped;
    FLOWSCHED_RETURN_IF_ERROR(SetSupply(v, problem.supply[v]));
  }
  // Each list laid out in its regions at once: appended by SetArc, every
  // entry would need a move by PlaceMisplaced.
  if (!graph_.Load(problem, [this] { return Stopped(); })) return stopped;
  // The graph grew its handles itself; this sizes the solver's own arrays.
  if (!problem.arcs.empty()) {
    GrowHandles(static_cast<uint32_t>(problem.arcs.size() - 1));
  }
  dirty_handles_.reserve(problem.arcs.size());
  for (uint32_t a = 0; a < problem.arcs.size(); ++a) {
    const int64_t cost = problem.arcs[a].cost;
    max_abs_cost_ = std::max(max_abs_cost_, cost < 0 ? -cost : cost);
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
  if (!graph_.entries(node).empty()) {
    return absl::FailedPreconditionError(
        fmt::format("node {} still has {} arc ends; remove its arcs first",
                    node, graph_.entries(node).size()));
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
  FLOWSCHED_RETURN_IF_ERROR(ValidateArcChange(handle, capacity, cost));
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
      (graph_.arc(fwd).head != dst || graph_.arc(rev).head != src)) {
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
    graph_.AddArc(handle, src, dst, capacity, cost);
  } else {
    const int64_t flow = graph_.flow(handle);
    total_cost_ += static_cast<Int128>(flow) * (cost - graph_.arc(fwd).cost);
    graph_.SetCost(handle, cost);
    // Capacity below the flow: cancel the surplus at once (Hapi: x <-
    // min(x, u')); the tail keeps the units as excess, the head loses them.
    if (flow > capacity) Push(rev, flow - capacity);
    graph_.SetCapacityAndFlow(handle, capacity, graph_.flow(handle));
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
  const uint32_t rev = 2 * handle + 1;
  // Cancel the flow: the tail keeps it as excess, the head is left short.
  if (graph_.arc(rev).residual > 0) Push(rev, graph_.arc(rev).residual);
  graph_.RemoveArc(handle);
}

absl::Status IncrementalSolver::InstallSolution(
    const std::vector<int64_t>& flow, const std::vector<int64_t>& potentials) {
  if (flow.size() < graph_.handle_limit() || potentials.size() < node_limit_) {
    return absl::InvalidArgumentError(fmt::format(
        "solution covers {} handles and {} nodes; the network has {} and {}",
        flow.size(), potentials.size(), graph_.handle_limit(), node_limit_));
  }
  // Validate everything before touching any state.
  std::vector<Int128> balance(node_limit_, 0);
  Int128 cost = 0;
  for (uint32_t h = 0; h < graph_.handle_limit(); ++h) {
    if (!HandleLive(h)) continue;
    const uint32_t u = Tail(2 * h), v = graph_.arc(2 * h).head;
    const int64_t f = flow[h];
    if (f < 0 || f > graph_.capacity(h)) {
      return absl::InvalidArgumentError(fmt::format(
          "handle {}: flow {} outside [0, {}]", h, f, graph_.capacity(h)));
    }
    // Published potentials p: rc = cost - p[u] + p[v].
    const Int128 rc =
        Int128{graph_.arc(2 * h).cost} - potentials[u] + potentials[v];
    if ((f < graph_.capacity(h) && rc < 0) || (f > 0 && rc > 0)) {
      return absl::InvalidArgumentError(fmt::format(
          "handle {}: flow {} of {} violates complementary slackness", h, f,
          graph_.capacity(h)));
    }
    balance[u] -= f;
    balance[v] += f;
    cost += Int128{f} * graph_.arc(2 * h).cost;
  }
  for (uint32_t v = 0; v < node_limit_; ++v) {
    if (NodeExists(v) && balance[v] + supply_[v] != 0) {
      return absl::InvalidArgumentError(
          fmt::format("node {}: flow does not balance its supply", v));
    }
  }
  LogEverythingChanged();
  for (uint32_t h = 0; h < graph_.handle_limit(); ++h) {
    if (!HandleLive(h)) continue;
    graph_.SetCapacityAndFlow(h, graph_.capacity(h), flow[h]);
    handle_dirty_[h] = 0;
  }
  dirty_handles_.clear();
  graph_.PlaceMisplaced();  // here, not in the next round's first search
  graph_.ShrinkScratch();   // every arc was listed; rounds list few
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
  return graph_.flow(handle);
}

int64_t IncrementalSolver::potential(uint32_t node) const {
  return NodeExists(node) ? -label_[node].potential : 0;
}

IncrementalSolver::Imbalances IncrementalSolver::CollectImbalances() {
  sources_.clear();
  deficits_.clear();
  Imbalances imbalances;
  size_t kept = 0;
  for (uint32_t v : active_) {
    if (!NodeExists(v) || excess_[v] == 0) {
      in_active_[v] = 0;
      continue;
    }
    active_[kept++] = v;
    if (excess_[v] > 0) {
      sources_.push_back(v);
      imbalances.total_excess += excess_[v];
      imbalances.source_arcs += graph_.entries(v).size();
    } else {
      deficits_.push_back(v);
      imbalances.deficit_arcs += graph_.entries(v).size();
    }
  }
  active_.resize(kept);
  return imbalances;
}

absl::Status IncrementalSolver::CheckSolvable() const {
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
      kMaxCostSpan) {
    return absl::OutOfRangeError(fmt::format(
        "node_count {} times max |cost| {} exceeds 2^59; potentials could "
        "overflow int64",
        node_limit_, max_abs_cost_));
  }
  return absl::OkStatus();
}

bool IncrementalSolver::SearchBackward(const Imbalances& imbalances,
                                       const IncrementalStats& stats) const {
  // Backward pays when many excess nodes face few deficits: a job of new
  // tasks facing the sink, each task at its own distance from it. It also
  // pays when the excess sits on a hub and the deficits do not: a task
  // that finished on a full machine leaves the sink (adjacent to every
  // machine) with a unit the machine lacks, and a search from the sink
  // settles the whole zero-cost plateau of running tasks before it, one
  // from the machine a handful of nodes. A lone excess node left after the
  // first search is priced by either side's search alone (it is its own
  // nearest root), and the backward one alone settles less than the
  // two-sided pair. Forward stays the default otherwise (finished tasks
  // drained elsewhere, machine failures, cost changes).
  return options_.search_side == IncrementalOptions::SearchSide::kAuto &&
         (deficits_.size() * kBackwardRatio <= sources_.size() ||
          imbalances.deficit_arcs * kBackwardRatio <= imbalances.source_arcs ||
          (sources_.size() == 1 && stats.dijkstra_runs > 0));
}

absl::StatusOr<IncrementalSolver::PhaseEnd> IncrementalSolver::RunPhase(
    const Imbalances& imbalances, IncrementalStats& stats) {
  const auto total = static_cast<int64_t>(
      std::min<Int128>(imbalances.total_excess, kInfinity));
  const bool backward = SearchBackward(imbalances, stats);
  if (!backward && options_.two_sided_search && stats.dijkstra_runs > 0) {
    // IncrementalOptions::two_sided_search: price every excess node by
    // its own distance to the deficits first, so that the forward search
    // below leaves an admissible path from each of them, not only from
    // those as close as the nearest one.
    const int64_t backward_bound =
        ShortestDistances(total, /*backward=*/true, stats);
    if (stopped_) return PhaseEnd::kStopped;
    if (backward_bound != kInfinity) {
      UpdatePotentials(backward_bound, /*backward=*/true);
    }
  }
  const int64_t bound = ShortestDistances(total, backward, stats);
  if (stopped_) return PhaseEnd::kStopped;
  if (bound == kInfinity) {
    // No deficit is reachable from any excess: the pseudoflow still
    // satisfies rc >= 0 everywhere, so the state stays consistent and the
    // remaining imbalances carry over to the next Solve.
    return PhaseEnd::kInfeasible;
  }
  UpdatePotentials(bound, backward);
  const bool tree_moved = AugmentTreePaths(backward, stats);
  const bool flowed = BlockingFlow(stats);
  if (stopped_) return PhaseEnd::kStopped;
  if (!flowed && !tree_moved) {
    // Dijkstra just proved a zero-reduced-cost path to a deficit exists:
    // the tree holds it, and if a tree path was closed the blocking
    // flow's labels reach its root along the tree's arcs.
    return absl::InternalError("incremental: blocking flow made no progress");
  }
  return PhaseEnd::kProgress;
}

absl::StatusOr<IncrementalResult> IncrementalSolver::Solve() {
  const auto start = std::chrono::steady_clock::now();
  FLOWSCHED_RETURN_IF_ERROR(CheckSolvable());
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
    const Imbalances imbalances = CollectImbalances();
    if (overflow_) {
      return absl::OutOfRangeError(
          "a node's excess left [-2^62, 2^62]; rebuild the solver");
    }
    if (sources_.empty()) break;
    if (Stopped()) {
      return absl::CancelledError("incremental solve stopped by its caller");
    }
    FLOWSCHED_ASSIGN_OR_RETURN(const PhaseEnd end, RunPhase(imbalances, stats));
    if (end == PhaseEnd::kStopped) break;
    if (end == PhaseEnd::kInfeasible) {
      outcome = McmfOutcome::kInfeasible;
      break;
    }
  }
  if (stopped_) {
    return absl::CancelledError("incremental solve stopped by its caller");
  }
  if (recenter_needed_) RecenterPotentials();
  // A round without imbalance runs no search; placing here keeps the list
  // to about one round's changes (an error return above skips it; the next
  // search places them).
  graph_.PlaceMisplaced();
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
  // One pass over the residual arcs for arcs and flow.
  problem.arcs.clear();
  arc_handles.clear();
  Int128 total = 0;
  for (uint32_t h = 0; h < graph_.handle_limit(); ++h) {
    if (!HandleLive(h)) continue;
    const IncrementalResidualGraph::Arc& forward = graph_.arc(2 * h);
    const IncrementalResidualGraph::Arc& reverse = graph_.arc(2 * h + 1);
    problem.arcs.push_back(McmfArc{.src = reverse.head,
                                   .dst = forward.head,
                                   .capacity = graph_.capacity(h),
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
