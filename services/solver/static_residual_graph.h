#pragma once

// The residual network of an McmfProblem whose arcs do not change, in the
// layout the from-scratch solvers scan (cost scaling, relaxation and successive
// shortest path): one CSR array of residual arcs in which node v's arcs are
// [first_out(v), first_out(v + 1)). Input arc i becomes a forward arc (tail
// src, head dst, residual = capacity, cost = cost * cost_scale) and a reverse
// arc (tail dst, head src, residual 0, the negated cost); `mate` links the two.
// Within a node, arcs keep input order (a counting sort), so the layout, and a
// deterministic solver's run, is a pure function of the input. Parallel arcs
// and self-loops are kept as given (a self-loop's two arcs both lie in its
// node's block).
//
// The graph fixes the structure (first_out, head, mate, forward_arc); the
// solver owns the residual capacities and costs it stores in the arcs and
// changes them in place. Not thread-safe; a solver keeps one per Solve.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "services/solver/mcmf_problem.h"

namespace flowsched::solver {

class StaticResidualGraph {
 public:
  // 24 bytes, so a node's block of a few arcs is one or two cache lines.
  struct Arc {
    int64_t residual = 0;
    // The solver's cost of the arc, negated on the mate: the input cost
    // times the build's scale, or a reduced cost the solver maintains.
    int64_t cost = 0;
    uint32_t head = 0;
    uint32_t mate = 0;  // the paired arc in the other direction
  };
  static_assert(sizeof(Arc) == 24);

  // Replaces the graph with `problem`'s residual network, costs multiplied
  // by `cost_scale`. Calls placed(i, forward_arc(i)) for each input arc i,
  // in input order, as soon as its two arcs are in place: a solver's own
  // per-arc setup then shares the pass (and the arcs' cache lines). O(n + m)
  // time, 2m arcs plus n + 1 offsets and m arc indices of memory.
  // REQUIRES: ValidateProblem(problem) is OK (so 2m fits uint32_t) and
  // every |cost| * cost_scale fits int64_t.
  template <typename Placed>
  void Build(const McmfProblem& problem, int64_t cost_scale, Placed placed) {
    BuildWithCosts(
        problem,
        [&problem, cost_scale](size_t i) {
          return problem.arcs[i].cost * cost_scale;
        },
        placed);
  }
  // As Build, with input arc i's cost cost_of(i) (a reduced cost, say):
  // each arc is written once. REQUIRES: every |cost_of(i)| fits int64_t.
  template <typename CostOf, typename Placed>
  void BuildWithCosts(const McmfProblem& problem, CostOf cost_of,
                      Placed placed) {
    std::vector<uint32_t> next = Layout(problem);
    for (size_t i = 0; i < problem.arcs.size(); ++i) {
      const McmfArc& arc = problem.arcs[i];
      const uint32_t fwd = next[arc.src]++;
      const uint32_t rev = next[arc.dst]++;
      const int64_t cost = cost_of(i);
      arcs_[fwd] = Arc{arc.capacity, cost, arc.dst, rev};
      arcs_[rev] = Arc{0, -cost, arc.src, fwd};
      forward_arc_[i] = fwd;
      placed(i, fwd);
    }
  }
  void Build(const McmfProblem& problem, int64_t cost_scale = 1) {
    Build(problem, cost_scale, [](size_t, uint32_t) {});
  }

  [[nodiscard]] uint32_t node_count() const { return node_count_; }
  // Residual arcs: twice the input arcs.
  [[nodiscard]] size_t arc_count() const { return arcs_.size(); }
  // Start of v's arcs; first_out(v + 1) is their end. REQUIRES:
  // v <= node_count().
  [[nodiscard]] uint32_t first_out(uint32_t v) const { return first_out_[v]; }
  Arc& arc(uint32_t a) { return arcs_[a]; }
  [[nodiscard]] const Arc& arc(uint32_t a) const { return arcs_[a]; }
  [[nodiscard]] uint32_t tail(uint32_t a) const {
    return arcs_[arcs_[a].mate].head;
  }
  // The forward residual arc of input arc i.
  [[nodiscard]] uint32_t forward_arc(size_t i) const { return forward_arc_[i]; }

 private:
  // Sizes the arrays and fills first_out_ (a counting sort by tail); returns
  // each node's first arc, where Build places its arcs in input order.
  std::vector<uint32_t> Layout(const McmfProblem& problem);

  uint32_t node_count_ = 0;
  std::vector<uint32_t> first_out_;  // node_count_ + 1 offsets into arcs_
  std::vector<Arc> arcs_;
  std::vector<uint32_t> forward_arc_;  // input arc -> residual arc
};

}  // namespace flowsched::solver
