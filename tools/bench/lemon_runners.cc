#include "tools/bench/lemon_runners.h"

#include <lemon/cost_scaling.h>
#include <lemon/network_simplex.h>
#include <lemon/smart_graph.h>

#include <chrono>

namespace flowsched::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Graph = lemon::SmartDigraph;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

// The graph build is part of total_ms so that LEMON and flowsched both
// start from the same McmfProblem (flowsched's Solve builds its own
// residual graph too).
template <typename Algorithm>
LemonRun Run(const solver::McmfProblem& problem) {
  LemonRun run;
  const Clock::time_point start = Clock::now();
  Graph graph;
  graph.reserveNode(static_cast<int>(problem.node_count));
  graph.reserveArc(static_cast<int>(problem.arcs.size()));
  for (uint32_t v = 0; v < problem.node_count; ++v) graph.addNode();
  Graph::NodeMap<int64_t> supply(graph);
  for (uint32_t v = 0; v < problem.node_count; ++v) {
    supply[Graph::nodeFromId(static_cast<int>(v))] = problem.supply[v];
  }
  for (const solver::McmfArc& arc : problem.arcs) {
    graph.addArc(Graph::nodeFromId(static_cast<int>(arc.src)),
                 Graph::nodeFromId(static_cast<int>(arc.dst)));
  }
  Graph::ArcMap<int64_t> upper(graph);
  Graph::ArcMap<int64_t> cost(graph);
  for (size_t i = 0; i < problem.arcs.size(); ++i) {
    const Graph::Arc a = Graph::arcFromId(static_cast<int>(i));
    upper[a] = problem.arcs[i].capacity;
    cost[a] = problem.arcs[i].cost;
  }
  Algorithm algorithm(graph);
  algorithm.supplyMap(supply).upperMap(upper).costMap(cost);
  const Clock::time_point run_start = Clock::now();
  const typename Algorithm::ProblemType result = algorithm.run();
  run.run_ms = MsSince(run_start);
  if (result == Algorithm::OPTIMAL) {
    run.optimal = true;
    run.cost = algorithm.template totalCost<int64_t>();
  } else if (result == Algorithm::UNBOUNDED) {
    run.unbounded = true;
  }
  run.total_ms = MsSince(start);
  return run;
}

}  // namespace

LemonRun SolveWithLemon(const solver::McmfProblem& problem,
                        LemonAlgorithm algorithm) {
  if (algorithm == LemonAlgorithm::kNetworkSimplex) {
    return Run<lemon::NetworkSimplex<Graph, int64_t, int64_t>>(problem);
  }
  return Run<lemon::CostScaling<Graph, int64_t, int64_t>>(problem);
}

}  // namespace flowsched::bench
