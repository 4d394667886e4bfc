#include "services/solver/successive_shortest_path.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "services/common/status_macros.h"
#include "services/solver/int128.h"
#include "services/solver/problem_validator.h"
#include "services/solver/solution_cost.h"
#include "services/solver/static_residual_graph.h"

namespace flowsched::solver {
namespace {

constexpr int64_t kInfiniteDistance = std::numeric_limits<int64_t>::max();

// Potentials stay within node_count * max|cost| of each other and drift by at
// most that much in total (see SspWorkspace::UpdatePotentials), so requiring
// the product to stay below 2^61 keeps every reduced cost and distance label
// inside int64 without per-operation checks.
constexpr int64_t kMaxPotentialSpan = int64_t{1} << 61;

class SspWorkspace {
 public:
  using Arc = StaticResidualGraph::Arc;

  explicit SspWorkspace(const McmfProblem& problem) : problem_(problem) {}

  // Returns kOptimal / kInfeasible, or OutOfRange if the numbers could
  // overflow int64.
  absl::StatusOr<McmfOutcome> Run();

  // Valid after Run() returned kOptimal.
  absl::StatusOr<McmfSolution> ExtractSolution() const;

 private:
  absl::Status SaturateNegativeArcs();

  // Multi-source Dijkstra on reduced costs from every node with excess.
  // Stops at the first deficit node popped and returns its distance D, or
  // kInfiniteDistance if no deficit node is reachable (the problem is
  // infeasible).
  int64_t ShortestDistances();
  void UpdatePotentials(int64_t bound);

  // Pushes flow along zero-reduced-cost paths from excess to deficit nodes.
  // Returns whether any flow moved.
  bool BlockingFlow();
  void TouchForDfs(uint32_t v);

  int64_t ReducedCost(uint32_t tail, const Arc& arc) const {
    return arc.cost + potential_[tail] - potential_[arc.head];
  }

  const McmfProblem& problem_;
  uint32_t node_count_ = 0;

  // Residual network with the original costs, in CSR order rather than as
  // an i / i^1 forward-star list: Dijkstra and the DFS scan a node's arcs
  // sequentially, and a CSR block is one or two cache lines.
  StaticResidualGraph graph_;
  std::vector<int64_t> excess_;  // > 0 excess, < 0 deficit
  // Internal potential pi with reduced cost c + pi[u] - pi[v] >= 0 on every
  // residual arc with capacity; the published potentials are -pi to match
  // the McmfSolution convention c - p[u] + p[v].
  std::vector<int64_t> potential_;
  std::vector<uint32_t> excess_nodes_;  // ascending; compacted lazily

  // Dijkstra scratch, reset only where touched.
  std::vector<int64_t> dist_;
  std::vector<uint32_t> touched_;
  std::vector<uint32_t> settled_;
  std::vector<std::pair<int64_t, uint32_t>> heap_;

  // DFS scratch; stamps avoid an O(n) reset per pass.
  enum : uint8_t { kFresh = 0, kOnPath = 1, kDead = 2 };
  uint32_t pass_ = 0;
  std::vector<uint32_t> pass_stamp_;
  std::vector<uint32_t> current_arc_;
  std::vector<uint8_t> dfs_state_;
  std::vector<uint32_t> path_;  // residual arcs from the root
};

absl::Status SspWorkspace::SaturateNegativeArcs() {
  // Saturating every negative arc leaves only non-negative-cost residual
  // arcs, so zero potentials are a valid start for Dijkstra. Excess is summed
  // in Int128 because many large arcs may end at one node.
  std::vector<Int128> excess(problem_.supply.begin(), problem_.supply.end());
  for (size_t i = 0; i < problem_.arcs.size(); ++i) {
    const McmfArc& arc = problem_.arcs[i];
    if (arc.cost >= 0 || arc.capacity == 0) continue;
    Arc& fwd = graph_.arc(graph_.forward_arc(i));
    graph_.arc(fwd.mate).residual += fwd.residual;
    fwd.residual = 0;
    excess[arc.src] -= arc.capacity;
    excess[arc.dst] += arc.capacity;
  }
  constexpr Int128 kMaxExcess = int64_t{1} << 62;
  excess_.assign(node_count_, 0);
  for (uint32_t v = 0; v < node_count_; ++v) {
    if (excess[v] > kMaxExcess || excess[v] < -kMaxExcess) {
      return absl::OutOfRangeError(fmt::format(
          "node {} would carry more than 2^62 units after saturating its "
          "negative-cost arcs",
          v));
    }
    excess_[v] = static_cast<int64_t>(excess[v]);
    if (excess_[v] > 0) excess_nodes_.push_back(v);
  }
  return absl::OkStatus();
}

absl::StatusOr<McmfOutcome> SspWorkspace::Run() {
  int64_t max_abs_cost = 0;
  for (const McmfArc& arc : problem_.arcs) {
    max_abs_cost = std::max(max_abs_cost, arc.cost < 0 ? -arc.cost : arc.cost);
  }
  if (static_cast<Int128>(max_abs_cost) *
          (static_cast<Int128>(problem_.node_count) + 1) >
      kMaxPotentialSpan) {
    return absl::OutOfRangeError(fmt::format(
        "node_count {} times max |cost| {} exceeds 2^61; potentials could "
        "overflow int64",
        problem_.node_count, max_abs_cost));
  }
  node_count_ = problem_.node_count;
  graph_.Build(problem_);
  FLOWSCHED_RETURN_IF_ERROR(SaturateNegativeArcs());

  potential_.assign(node_count_, 0);
  dist_.assign(node_count_, kInfiniteDistance);
  pass_stamp_.assign(node_count_, 0);
  current_arc_.assign(node_count_, 0);
  dfs_state_.assign(node_count_, kFresh);

  while (true) {
    std::erase_if(excess_nodes_,
                  [this](uint32_t v) { return excess_[v] == 0; });
    if (excess_nodes_.empty()) return McmfOutcome::kOptimal;
    const int64_t bound = ShortestDistances();
    if (bound == kInfiniteDistance) return McmfOutcome::kInfeasible;
    UpdatePotentials(bound);
    if (!BlockingFlow()) {
      // Cannot happen: Dijkstra just proved a zero-reduced-cost path exists
      // and the first DFS that reaches it augments. Failing loudly beats
      // looping forever if that reasoning is ever broken.
      return absl::InternalError("ssp: blocking flow made no progress");
    }
  }
}

int64_t SspWorkspace::ShortestDistances() {
  // A binary heap with lazy deletion; (distance, node) pairs make ties break
  // by node index, keeping runs deterministic.
  const auto cmp = std::greater<std::pair<int64_t, uint32_t>>();
  heap_.clear();
  for (uint32_t v : excess_nodes_) {
    dist_[v] = 0;
    touched_.push_back(v);
    heap_.emplace_back(0, v);
  }
  std::make_heap(heap_.begin(), heap_.end(), cmp);
  int64_t bound = kInfiniteDistance;
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), cmp);
    const auto [d, u] = heap_.back();
    heap_.pop_back();
    if (d != dist_[u]) continue;  // stale entry
    settled_.push_back(u);
    if (excess_[u] < 0) {
      bound = d;
      break;
    }
    for (uint32_t a = graph_.first_out(u); a < graph_.first_out(u + 1); ++a) {
      const Arc& arc = graph_.arc(a);
      if (arc.residual == 0) continue;
      const int64_t nd = d + ReducedCost(u, arc);
      if (nd < dist_[arc.head]) {
        if (dist_[arc.head] == kInfiniteDistance) touched_.push_back(arc.head);
        dist_[arc.head] = nd;
        heap_.emplace_back(nd, arc.head);
        std::push_heap(heap_.begin(), heap_.end(), cmp);
      }
    }
  }
  return bound;
}

void SspWorkspace::UpdatePotentials(int64_t bound) {
  // The textbook update pi[v] += min(dist[v], bound) moves every unsettled
  // node by `bound`; subtracting `bound` from all nodes changes no reduced
  // cost, so only settled nodes (dist <= bound) need touching. Every
  // residual arc keeps a non-negative reduced cost, and arcs on shortest
  // paths to the nearest deficit get reduced cost exactly zero.
  for (uint32_t v : settled_) {
    potential_[v] += dist_[v] - bound;
  }
  for (uint32_t v : touched_) dist_[v] = kInfiniteDistance;
  settled_.clear();
  touched_.clear();
}

void SspWorkspace::TouchForDfs(uint32_t v) {
  if (pass_stamp_[v] != pass_) {
    pass_stamp_[v] = pass_;
    current_arc_[v] = graph_.first_out(v);
    dfs_state_[v] = kFresh;
  }
}

bool SspWorkspace::BlockingFlow() {
  // Iterative DFS with current-arc pointers over admissible arcs (residual
  // capacity and zero reduced cost). Zero-cost cycles make the admissible
  // graph cyclic, so arcs into nodes already on the path are skipped; that
  // can hide a few paths in this pass, but the next Dijkstra then returns
  // distance 0 and they are found then, so correctness never depends on this
  // pass being exhaustive.
  ++pass_;
  bool moved = false;
  for (uint32_t root : excess_nodes_) {
    if (excess_[root] <= 0) continue;
    TouchForDfs(root);
    if (dfs_state_[root] == kDead) continue;
    path_.clear();
    dfs_state_[root] = kOnPath;
    uint32_t u = root;
    while (excess_[root] > 0) {
      if (excess_[u] < 0) {
        int64_t delta = std::min(excess_[root], -excess_[u]);
        for (uint32_t a : path_)
          delta = std::min(delta, graph_.arc(a).residual);
        for (uint32_t a : path_) {
          graph_.arc(a).residual -= delta;
          graph_.arc(graph_.arc(a).mate).residual += delta;
        }
        excess_[root] -= delta;
        excess_[u] += delta;
        moved = true;
        // Retreat to the tail of the first saturated arc; nodes above it
        // are left fresh, not dead, since they may still reach a deficit.
        for (size_t k = 0; k < path_.size(); ++k) {
          if (graph_.arc(path_[k]).residual != 0) continue;
          for (size_t j = k; j < path_.size(); ++j) {
            dfs_state_[graph_.arc(path_[j]).head] = kFresh;
          }
          path_.resize(k);
          u = path_.empty() ? root : graph_.arc(path_.back()).head;
          break;
        }
        continue;
      }
      uint32_t a = current_arc_[u];
      const uint32_t end = graph_.first_out(u + 1);
      for (; a < end; ++a) {
        const Arc& arc = graph_.arc(a);
        if (arc.residual == 0 || ReducedCost(u, arc) != 0) continue;
        TouchForDfs(arc.head);
        if (dfs_state_[arc.head] == kFresh) break;
      }
      current_arc_[u] = a;
      if (a < end) {
        path_.push_back(a);
        u = graph_.arc(a).head;
        dfs_state_[u] = kOnPath;
        continue;
      }
      dfs_state_[u] = kDead;
      if (path_.empty()) break;  // the root cannot reach a deficit
      path_.pop_back();
      u = path_.empty() ? root : graph_.arc(path_.back()).head;
      ++current_arc_[u];
    }
    // Leave nodes of an abandoned path fresh for the next root.
    for (uint32_t a : path_) dfs_state_[graph_.arc(a).head] = kFresh;
    if (dfs_state_[root] == kOnPath) dfs_state_[root] = kFresh;
  }
  return moved;
}

absl::StatusOr<McmfSolution> SspWorkspace::ExtractSolution() const {
  FLOWSCHED_ASSIGN_OR_RETURN(
      McmfSolution solution, SolutionFromResiduals(problem_, [this](size_t i) {
        return graph_.arc(graph_.forward_arc(i)).residual;
      }));
  solution.potentials.resize(node_count_);
  for (uint32_t v = 0; v < node_count_; ++v) {
    solution.potentials[v] = -potential_[v];
  }
  return solution;
}

}  // namespace

absl::StatusOr<McmfSolution> SuccessiveShortestPath::Solve(
    const McmfProblem& problem) {
  FLOWSCHED_RETURN_IF_ERROR(ValidateProblem(problem));
  SspWorkspace workspace(problem);
  FLOWSCHED_ASSIGN_OR_RETURN(const McmfOutcome outcome, workspace.Run());
  McmfSolution solution;
  if (outcome == McmfOutcome::kOptimal) {
    FLOWSCHED_ASSIGN_OR_RETURN(solution, workspace.ExtractSolution());
  } else {
    solution.outcome = McmfOutcome::kInfeasible;
  }
  solution.algorithm = std::string(name());
  return solution;
}

}  // namespace flowsched::solver
