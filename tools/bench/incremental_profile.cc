// Hand-run profile of IncrementalSolver on the benchmark's incremental
// sequences (not a test, never run by ctest): per round, the time to apply
// the changes, to Solve, to export and check, plus the solver's counters.
//
// Usage: incremental_profile [quincy|ls] [machines] [rounds] [change]
//          [drain_arc_budget] [1: kFirstDeficit] [1: SearchSide::kForward]
//          [1: rebalance_leaves off] [1: random starts] [1: own placements]
//   change: fraction of live tasks changing per round (default 0.01)
//   random starts: IncrementalOptions::StartModel::kRandomFreeSlot (the
//   generator's stress model) instead of starts that follow the optimum
//   own placements: starts follow the incremental solver's own flow rather
//   than the generator's reference optimum (on the Quincy sequence at
//   1,250 machines: p50 77 vs 90 ms a round before two-sided phases)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "services/solver/cost_scaling.h"
#include "services/solver/flow_checker.h"
#include "services/solver/incremental_solver.h"
#include "tools/bench/scheduling_networks.h"

namespace flowsched::bench {
namespace {

using Clock = std::chrono::steady_clock;
double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

int Run(int argc, char** argv) {
  const std::string shape_name = argc > 1 ? argv[1] : "ls";
  const auto machines = static_cast<uint32_t>(argc > 2 ? std::atoi(argv[2]) : 12500);
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 20;
  const double change = argc > 4 ? std::atof(argv[4]) : 0.01;
  ClusterShape shape;
  shape.shape = shape_name == "quincy" ? NetworkShape::kQuincy
                                       : NetworkShape::kLoadSpreading;
  shape.machines = machines;
  shape.utilisation = 0.9;
  IncrementalOptions options{.min_change = change, .max_change = change};
  if (argc > 9 && std::atoi(argv[9]) == 1) {
    options.starts = IncrementalOptions::StartModel::kRandomFreeSlot;
  }
  const bool follow_own_flow = argc > 10 && std::atoi(argv[10]) == 1;
  ClusterNetwork network(shape, options);
  const solver::McmfProblem& problem = network.problem();
  solver::IncrementalOptions solver_options;
  if (argc > 5) solver_options.drain_arc_budget = static_cast<uint32_t>(std::atoi(argv[5]));
  if (argc > 6 && std::atoi(argv[6]) == 1) {
    solver_options.dijkstra_stop =
        solver::IncrementalOptions::DijkstraStop::kFirstDeficit;
  }
  if (argc > 7 && std::atoi(argv[7]) == 1) {
    solver_options.search_side = solver::IncrementalOptions::SearchSide::kForward;
  }
  if (argc > 8 && std::atoi(argv[8]) == 1) solver_options.rebalance_leaves = false;
  solver::IncrementalSolver solver(solver_options);
  for (uint32_t v = 0; v < problem.node_count; ++v) {
    if (absl::Status s = solver.SetSupply(v, problem.supply[v]); !s.ok()) {
      fmt::print("node {}: {}\n", v, s.ToString());
      return 1;
    }
  }
  for (uint32_t a = 0; a < problem.arcs.size(); ++a) {
    const auto& arc = problem.arcs[a];
    if (absl::Status s = solver.SetArc(a, arc.src, arc.dst, arc.capacity, arc.cost);
        !s.ok()) {
      fmt::print("arc {}: {}\n", a, s.ToString());
      return 1;
    }
  }
  Clock::time_point t = Clock::now();
  solver::CostScaling cold;
  auto solution = cold.Solve(problem);
  if (!solution.ok()) {
    fmt::print("cold solve: {}\n", solution.status().ToString());
    return 1;
  }
  if (absl::Status s = solver.InstallSolution(solution->flow, solution->potentials);
      !s.ok()) {
    fmt::print("install: {}\n", s.ToString());
    return 1;
  }
  fmt::print("{} nodes {} arcs; cold cost scaling + install {:.1f} ms\n",
             problem.node_count, problem.arcs.size(), MsSince(t));
  std::vector<double> apply_ms, solve_ms, check_ms;
  for (int r = 0; r < rounds; ++r) {
    std::vector<int64_t> own_flow;
    if (follow_own_flow) {
      own_flow.resize(problem.arcs.size());
      for (uint32_t a = 0; a < problem.arcs.size(); ++a) {
        own_flow[a] = solver.flow(a);
      }
    }
    const RoundChanges changes =
        network.NextRound(follow_own_flow ? &own_flow : nullptr);
    t = Clock::now();
    for (uint32_t v : changes.changed_nodes) {
      (void)solver.SetSupply(v, problem.supply[v]);
    }
    for (uint32_t a : changes.changed_arcs) {
      const auto& arc = problem.arcs[a];
      (void)solver.SetArc(a, arc.src, arc.dst, arc.capacity, arc.cost);
    }
    apply_ms.push_back(MsSince(t));
    auto result = solver.Solve();
    if (!result.ok() || result->outcome != solver::McmfOutcome::kOptimal) {
      fmt::print("round {} failed\n", r);
      return 1;
    }
    solve_ms.push_back(result->stats.solve_ms);
    t = Clock::now();
    solver::McmfProblem exported;
    solver::McmfSolution exported_solution;
    std::vector<uint32_t> handles;
    solver.Export(exported, exported_solution, handles);
    const bool ok = solver::CheckOptimalFlow(exported, exported_solution).ok();
    check_ms.push_back(MsSince(t));
    const auto& s = result->stats;
    fmt::print(
        "round {:2}: nodes {:5} arcs {:6} arr {:4} done {:4} start {:4} fail {} "
        "| apply {:6.2f} solve {:8.2f} check {:6.1f}{} | dijkstra {:4} touched "
        "{:9} aug {:6} tree {:5} repaired {:5} drained {:5} backward {:4} "
        "flows {:4}\n",
        r + 1, changes.changed_nodes.size(), changes.changed_arcs.size(),
        changes.arrivals, changes.completions, changes.starts,
        changes.failed_machine >= 0 ? 1 : 0, apply_ms.back(), s.solve_ms,
        check_ms.back(), ok ? "" : " CHECK FAILED", s.dijkstra_runs,
        s.nodes_touched, s.augmentations, s.tree_augmentations,
        s.arcs_repaired, s.drained_units,
        s.backward_runs, s.blocking_flows);
  }
  fmt::print("apply p50 {:.2f}; solve p50 {:.2f} p90 {:.2f} p99 {:.2f}; check p50 {:.1f} ms\n",
             Percentile(apply_ms, 0.5), Percentile(solve_ms, 0.5),
             Percentile(solve_ms, 0.9), Percentile(solve_ms, 0.99),
             Percentile(check_ms, 0.5));
  return 0;
}

}  // namespace
}  // namespace flowsched::bench

int main(int argc, char** argv) { return flowsched::bench::Run(argc, argv); }
