// Benchmark: CostScaling (cold and warm) against LEMON NetworkSimplex and
// LEMON CostScaling on Quincy-style scheduling networks. Not a test: it
// prints a table and checks that every solver reached the same cost.
//
//   cost_scaling_bench [tasks=10000] [utilisation=0.9] [alpha=16]
//                      [global_update_frequency=1.0] [price_refinement=1]
//                      [reps=3]

#include <lemon/cost_scaling.h>
#include <lemon/list_graph.h>
#include <lemon/network_simplex.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "services/solver/cost_scaling.h"
#include "services/solver/flow_checker.h"
#include "services/solver/test_graphs.h"

namespace flowsched::solver {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

struct LemonTimes {
  double simplex_ms = 0;
  double scaling_ms = 0;
  int64_t simplex_cost = 0;
  int64_t scaling_cost = 0;
};

// Times run() only (graph construction excluded, which favours LEMON).
LemonTimes RunLemon(const McmfProblem& problem) {
  lemon::ListDigraph graph;
  std::vector<lemon::ListDigraph::Node> nodes;
  for (uint32_t v = 0; v < problem.node_count; ++v)
    nodes.push_back(graph.addNode());
  lemon::ListDigraph::NodeMap<int64_t> supply(graph);
  for (uint32_t v = 0; v < problem.node_count; ++v)
    supply[nodes[v]] = problem.supply[v];
  lemon::ListDigraph::ArcMap<int64_t> upper(graph);
  lemon::ListDigraph::ArcMap<int64_t> cost(graph);
  for (const McmfArc& arc : problem.arcs) {
    const auto a = graph.addArc(nodes[arc.src], nodes[arc.dst]);
    upper[a] = arc.capacity;
    cost[a] = arc.cost;
  }
  LemonTimes times;
  {
    lemon::NetworkSimplex<lemon::ListDigraph, int64_t, int64_t> simplex(graph);
    simplex.supplyMap(supply).upperMap(upper).costMap(cost);
    const auto start = Clock::now();
    simplex.run();
    times.simplex_ms = Ms(start);
    times.simplex_cost = simplex.totalCost<int64_t>();
  }
  {
    lemon::CostScaling<lemon::ListDigraph, int64_t, int64_t> scaling(graph);
    scaling.supplyMap(supply).upperMap(upper).costMap(cost);
    const auto start = Clock::now();
    scaling.run();
    times.scaling_ms = Ms(start);
    times.scaling_cost = scaling.totalCost<int64_t>();
  }
  return times;
}

McmfSolution SolveOrDie(CostScaling& solver, const McmfProblem& problem,
                        double* ms, const McmfSolution* from = nullptr) {
  const auto start = Clock::now();
  absl::StatusOr<McmfSolution> solution =
      from == nullptr ? solver.Solve(problem)
                      : solver.SolveFrom(problem, from->flow, from->potentials);
  *ms = Ms(start);
  if (!solution.ok() || !CheckOptimalFlow(problem, *solution).ok()) {
    std::fprintf(
        stderr, "solver failed: %s\n",
        solution.ok() ? "check" : solution.status().ToString().c_str());
    std::exit(1);
  }
  return *solution;
}

int Main(int argc, char** argv) {
  const auto tasks =
      static_cast<uint32_t>(argc > 1 ? std::atoi(argv[1]) : 10000);
  const double utilisation = argc > 2 ? std::atof(argv[2]) : 0.9;
  CostScalingOptions options;
  if (argc > 3) options.alpha = std::atoi(argv[3]);
  if (argc > 4) options.global_update_frequency = std::atof(argv[4]);
  if (argc > 5) options.price_refinement = std::atoi(argv[5]) != 0;
  const int reps = argc > 6 ? std::atoi(argv[6]) : 3;

  // Plain assignments: this file is C++17 (see CMakeLists.txt).
  testgen::SchedulingOptions shape;
  shape.task_count = tasks;
  shape.job_count = std::max<uint32_t>(1, tasks / 50);
  shape.machine_count = std::max<uint32_t>(2, tasks / 8);
  shape.rack_count = std::max<uint32_t>(1, tasks / 400);
  shape.utilisation = utilisation;
  shape.max_preferences = 6;
  McmfProblem problem = testgen::SchedulingNetwork(1, shape);
  const uint32_t sink = problem.node_count - 1;

  CostScaling solver(options);
  double ours_ms = 1e30;
  McmfSolution solution;
  for (int r = 0; r < reps; ++r) {
    double ms = 0;
    solution = SolveOrDie(solver, problem, &ms);
    ours_ms = std::min(ours_ms, ms);
  }
  LemonTimes lemon;
  lemon.simplex_ms = lemon.scaling_ms = 1e30;
  for (int r = 0; r < reps; ++r) {
    const LemonTimes t = RunLemon(problem);
    lemon.simplex_ms = std::min(lemon.simplex_ms, t.simplex_ms);
    lemon.scaling_ms = std::min(lemon.scaling_ms, t.scaling_ms);
    lemon.simplex_cost = t.simplex_cost;
    lemon.scaling_cost = t.scaling_cost;
  }
  if (lemon.simplex_cost != solution.total_cost ||
      lemon.scaling_cost != solution.total_cost) {
    std::fprintf(stderr, "cost mismatch\n");
    return 1;
  }

  // Incremental rounds: ~1% of the tasks change per round (half of them
  // finish: supply 1 -> 0; as many new ones arrive on nodes that were idle).
  // The first round idles 5% of the task nodes to have room for arrivals.
  std::mt19937_64 rng(7);
  std::vector<uint32_t> idle;
  std::vector<uint32_t> live;
  for (uint32_t t = 0; t < tasks; ++t) {
    if (rng() % 20 == 0) {
      idle.push_back(t);
      problem.supply[t] = 0;
      ++problem.supply[sink];
    } else {
      live.push_back(t);
    }
  }
  double unused = 0;
  McmfSolution previous = SolveOrDie(solver, problem, &unused);
  double warm_total = 0;
  double cold_total = 0;
  constexpr int kRounds = 5;
  for (int round = 0; round < kRounds; ++round) {
    const size_t changes = std::max<size_t>(1, tasks / 200);
    for (size_t i = 0; i < changes; ++i) {
      const size_t li = rng() % live.size();
      const size_t ii = rng() % idle.size();
      std::swap(live[li], idle[ii]);  // live[li] arrives, idle[ii] finishes
      problem.supply[live[li]] = 1;
      problem.supply[idle[ii]] = 0;
    }
    double warm_ms = 0;
    double cold_ms = 0;
    const McmfSolution warm = SolveOrDie(solver, problem, &warm_ms, &previous);
    const McmfSolution cold = SolveOrDie(solver, problem, &cold_ms);
    if (warm.total_cost != cold.total_cost) {
      std::fprintf(stderr, "warm/cold cost mismatch\n");
      return 1;
    }
    warm_total += warm_ms;
    cold_total += cold_ms;
    previous = warm;
  }
  std::printf(
      "| %6u | %4.0f%% | %7u | %8zu | %8.1f | %8.1f | %8.1f | %8.1f | %8.1f |"
      " %5.1fx |\n",
      tasks, utilisation * 100, problem.node_count, problem.arcs.size(),
      ours_ms, lemon.simplex_ms, lemon.scaling_ms, cold_total / kRounds,
      warm_total / kRounds, cold_total / warm_total);
  return 0;
}

}  // namespace
}  // namespace flowsched::solver

int main(int argc, char** argv) { return flowsched::solver::Main(argc, argv); }
