#include "services/solver/feasibility.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "services/solver/no_index.h"

namespace flowsched::solver {

bool HasFeasibleFlow(const McmfProblem& problem) {
  return CheckFeasibility(problem, nullptr) == Feasibility::kFeasible;
}

Feasibility CheckFeasibility(const McmfProblem& problem,
                             const std::atomic<bool>* stop) {
  // One function of 117 lines on purpose: a preflight of cost scaling and
  // relaxation whose CSR build and Dinic phases share seven local arrays
  // (levels, current arcs, path, roots, queue, residuals, excesses).
  const auto stopped = [stop] {
    return stop != nullptr && stop->load(std::memory_order_relaxed);
  };
  if (stopped()) return Feasibility::kStopped;
  const uint32_t node_count = problem.node_count;
  const size_t arc_count = problem.arcs.size();
  // CSR residual network, counting-sorted by tail in input order; `mate`
  // pairs each arc with its reverse.
  std::vector<uint32_t> first_out(size_t{node_count} + 1, 0);
  for (const McmfArc& arc : problem.arcs) {
    ++first_out[size_t{arc.src} + 1];
    ++first_out[size_t{arc.dst} + 1];
  }
  for (size_t v = 0; v < node_count; ++v) first_out[v + 1] += first_out[v];
  std::vector<uint32_t> next(first_out.begin(), first_out.end() - 1);
  std::vector<uint32_t> head(2 * arc_count);
  std::vector<uint32_t> mate(2 * arc_count);
  std::vector<int64_t> residual(2 * arc_count, 0);
  for (size_t i = 0; i < arc_count; ++i) {
    const McmfArc& arc = problem.arcs[i];
    const uint32_t fwd = next[arc.src]++;
    const uint32_t rev = next[arc.dst]++;
    head[fwd] = arc.dst;
    head[rev] = arc.src;
    mate[fwd] = rev;
    mate[rev] = fwd;
    residual[fwd] = arc.capacity;
  }
  next.clear();
  next.shrink_to_fit();
  std::vector<int64_t> excess(problem.supply.begin(), problem.supply.end());

  // Dinic: BFS levels from every excess node, then blocking flow by DFS with
  // current-arc pointers until each root's excess is gone or the root is cut
  // off. Feasible iff every excess can be routed to deficits.
  std::vector<uint32_t> level(node_count);
  std::vector<uint32_t> current(node_count);
  std::vector<uint32_t> queue;
  std::vector<uint32_t> roots;
  std::vector<uint32_t> path;
  while (true) {
    roots.clear();
    for (uint32_t v = 0; v < node_count; ++v) {
      if (excess[v] > 0) roots.push_back(v);
    }
    if (roots.empty()) return Feasibility::kFeasible;
    if (stopped()) return Feasibility::kStopped;
    std::fill(level.begin(), level.end(), kNoIndex);
    queue = roots;
    for (uint32_t v : roots) level[v] = 0;
    bool reached = false;
    for (size_t qi = 0; qi < queue.size(); ++qi) {
      const uint32_t u = queue[qi];
      if (excess[u] < 0) {
        // Paths stop at the first deficit; no need to look past it.
        reached = true;
        continue;
      }
      for (uint32_t a = first_out[u]; a < first_out[u + 1]; ++a) {
        const uint32_t v = head[a];
        if (residual[a] > 0 && level[v] == kNoIndex) {
          level[v] = level[u] + 1;
          queue.push_back(v);
        }
      }
    }
    if (!reached) return Feasibility::kInfeasible;
    for (uint32_t v = 0; v < node_count; ++v) current[v] = first_out[v];
    for (size_t r = 0; r < roots.size(); ++r) {
      if ((r & 1023) == 1023 && stopped()) return Feasibility::kStopped;
      const uint32_t root = roots[r];
      path.clear();
      uint32_t u = root;
      while (excess[root] > 0) {
        if (u != root && excess[u] < 0) {
          int64_t delta = std::min(excess[root], -excess[u]);
          for (uint32_t a : path) delta = std::min(delta, residual[a]);
          for (uint32_t a : path) {
            residual[a] -= delta;
            residual[mate[a]] += delta;
          }
          excess[root] -= delta;
          excess[u] += delta;
          for (size_t k = 0; k < path.size(); ++k) {
            if (residual[path[k]] != 0) continue;
            path.resize(k);
            break;
          }
          u = path.empty() ? root : head[path.back()];
          continue;
        }
        uint32_t a = current[u];
        const uint32_t end = first_out[u + 1];
        for (; a < end; ++a) {
          const uint32_t v = head[a];
          if (residual[a] > 0 && level[v] != kNoIndex &&
              level[v] == level[u] + 1) {
            break;
          }
        }
        current[u] = a;
        if (a < end) {
          path.push_back(a);
          u = head[a];
          continue;
        }
        level[u] = kNoIndex;  // dead end for the rest of this phase
        if (path.empty()) break;
        path.pop_back();
        u = path.empty() ? root : head[path.back()];
        ++current[u];
      }
    }
  }
}

}  // namespace flowsched::solver
