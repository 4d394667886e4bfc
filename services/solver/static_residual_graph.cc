#include "services/solver/static_residual_graph.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace flowsched::solver {

std::vector<uint32_t> StaticResidualGraph::Layout(const McmfProblem& problem) {
  node_count_ = problem.node_count;
  first_out_.assign(size_t{node_count_} + 1, 0);
  for (const McmfArc& arc : problem.arcs) {
    ++first_out_[size_t{arc.src} + 1];
    ++first_out_[size_t{arc.dst} + 1];
  }
  for (size_t v = 0; v < node_count_; ++v) first_out_[v + 1] += first_out_[v];
  arcs_.assign(2 * problem.arcs.size(), Arc{});
  forward_arc_.assign(problem.arcs.size(), 0);
  return {first_out_.begin(), first_out_.end() - 1};
}

}  // namespace flowsched::solver
