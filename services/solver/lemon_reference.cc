#include "services/solver/lemon_reference.h"

#include <lemon/list_graph.h>
#include <lemon/network_simplex.h>

#include <cstdlib>
#include <vector>

namespace flowsched::solver::testgen {

LemonResult SolveWithLemon(const McmfProblem& problem) {
  lemon::ListDigraph graph;
  std::vector<lemon::ListDigraph::Node> nodes;
  nodes.reserve(problem.node_count);
  for (uint32_t v = 0; v < problem.node_count; ++v) {
    nodes.push_back(graph.addNode());
  }
  lemon::ListDigraph::NodeMap<int64_t> supply(graph);
  for (uint32_t v = 0; v < problem.node_count; ++v) {
    supply[nodes[v]] = problem.supply[v];
  }
  lemon::ListDigraph::ArcMap<int64_t> upper(graph);
  lemon::ListDigraph::ArcMap<int64_t> cost(graph);
  for (const McmfArc& arc : problem.arcs) {
    const lemon::ListDigraph::Arc a =
        graph.addArc(nodes[arc.src], nodes[arc.dst]);
    upper[a] = arc.capacity;
    cost[a] = arc.cost;
  }
  lemon::NetworkSimplex<lemon::ListDigraph, int64_t, int64_t> simplex(graph);
  simplex.supplyMap(supply).upperMap(upper).costMap(cost);
  LemonResult result;
  switch (simplex.run()) {
    case lemon::NetworkSimplex<lemon::ListDigraph, int64_t, int64_t>::OPTIMAL:
      result.outcome = McmfOutcome::kOptimal;
      result.total_cost = simplex.totalCost<int64_t>();
      break;
    case lemon::NetworkSimplex<lemon::ListDigraph, int64_t,
                               int64_t>::INFEASIBLE:
      result.outcome = McmfOutcome::kInfeasible;
      break;
    case lemon::NetworkSimplex<lemon::ListDigraph, int64_t, int64_t>::UNBOUNDED:
      std::abort();
  }
  return result;
}

}  // namespace flowsched::solver::testgen
