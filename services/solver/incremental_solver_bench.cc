// Throwaway benchmark for IncrementalSolver (not a test; no assertions on
// time). Builds a scheduling-shaped network, then runs rounds that each
// finish and submit a fraction of the tasks, timing IncrementalSolver::Solve
// against LEMON NetworkSimplex solving the same exported round from scratch.
//
// Usage: incremental_solver_bench [machines] [tasks] [utilisation] [rounds]
//          [changes_per_round] [lemon_every] [variant]
// variant bit 0: kFirstDeficit Dijkstra; bit 1: no drain walks.

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "services/common/percentile.h"
#include "services/solver/flow_checker.h"
#include "services/solver/incremental_sim_testutil.h"
#include "services/solver/incremental_solver.h"
#include "services/solver/lemon_reference.h"

namespace flowsched::solver {
namespace {

long PeakRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;
}

int Run(int argc, char** argv) {
  auto arg = [&](int i, double fallback) {
    return argc > i ? std::atof(argv[i]) : fallback;
  };
  const auto machines = static_cast<uint32_t>(arg(1, 12500));
  const auto tasks = static_cast<uint32_t>(arg(2, 150000));
  const double utilisation = arg(3, 0.7);
  const int rounds = static_cast<int>(arg(4, 200));
  const int changes = static_cast<int>(arg(5, 1500));
  const int lemon_every = static_cast<int>(arg(6, 20));
  const int variant = static_cast<int>(arg(7, 0));

  IncrementalOptions options;
  if (variant & 1)
    options.dijkstra_stop = IncrementalOptions::DijkstraStop::kFirstDeficit;
  if (variant & 2) options.drain_arc_budget = 0;
  if (argc > 8) options.drain_arc_budget = static_cast<uint32_t>(arg(8, 256));
  IncrementalSolver solver(options);
  testgen::SimOptions sim_options{
      .machine_count = machines,
      .rack_count = std::max<uint32_t>(1, machines / 40),
      .job_count = std::max<uint32_t>(1, tasks / 100),
      .initial_tasks = tasks,
      .utilisation = utilisation,
      .populate = false};
  testgen::SchedulingSim sim(42, sim_options, solver);
  if (!sim.Build().ok()) {
    fmt::print("build failed: {}\n", sim.status().ToString());
    return 1;
  }
  // Fill the cluster in batches of 5,000 tasks with a Solve after each (a
  // cluster filling up); one cold SSP solve over 150k tasks takes minutes.
  auto t0 = std::chrono::steady_clock::now();
  for (uint32_t added = 0; added < tasks;) {
    const uint32_t batch = std::min<uint32_t>(5000, tasks - added);
    for (uint32_t i = 0; i < batch; ++i) sim.AddTask();
    added += batch;
    absl::StatusOr<IncrementalResult> warm = solver.Solve();
    if (!warm.ok() || warm->outcome != McmfOutcome::kOptimal) {
      fmt::print("warm-up solve failed\n");
      return 1;
    }
  }
  const double cold_ms = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - t0)
                             .count();
  McmfProblem problem;
  McmfSolution solution;
  std::vector<uint32_t> handles;
  solver.Export(problem, solution, handles);
  std::fflush(stdout);
  fmt::print(
      "network: {} nodes, {} arcs; filled in 5k-task batches in {:.1f} ms\n",
      problem.node_count, problem.arcs.size(), cold_ms);

  std::vector<double> times;
  std::vector<double> lemon_times;
  std::vector<double> touched;
  std::vector<double> dijkstras;
  int mismatches = 0;
  for (int round = 0; round < rounds; ++round) {
    for (int c = 0; c < changes / 2; ++c) sim.RemoveRandomTask();
    for (int c = 0; c < changes - changes / 2; ++c) sim.AddTask();
    absl::StatusOr<IncrementalResult> result = solver.Solve();
    if (!result.ok() || result->outcome != McmfOutcome::kOptimal) {
      fmt::print("round {} failed\n", round);
      return 1;
    }
    times.push_back(result->stats.solve_ms);
    touched.push_back(static_cast<double>(result->stats.nodes_touched));
    dijkstras.push_back(static_cast<double>(result->stats.dijkstra_runs));
    if (lemon_every > 0 && round % lemon_every == 0) {
      solver.Export(problem, solution, handles);
      const absl::Status check = CheckOptimalFlow(problem, solution);
      t0 = std::chrono::steady_clock::now();
      const testgen::LemonResult lemon = testgen::SolveWithLemon(problem);
      lemon_times.push_back(std::chrono::duration<double, std::milli>(
                                std::chrono::steady_clock::now() - t0)
                                .count());
      if (!check.ok() || lemon.total_cost != result->total_cost) {
        ++mismatches;
        fmt::print("round {}: check {} lemon {} ours {}\n", round,
                   check.ToString(), lemon.total_cost, result->total_cost);
      }
    }
  }
  const double p50 = Percentile(times, 0.5);
  const double lemon50 = Percentile(lemon_times, 0.5);
  fmt::print(
      "rounds {} x {} changes: solve p50 {:.2f} ms, p90 {:.2f}, p99 {:.2f}, "
      "max {:.2f}\n",
      rounds, changes, p50, Percentile(times, 0.9), Percentile(times, 0.99),
      Percentile(times, 1.0));
  fmt::print(
      "nodes touched p50 {:.0f} p99 {:.0f}; dijkstras p50 {:.0f} p99 {:.0f}\n",
      Percentile(touched, 0.5), Percentile(touched, 0.99),
      Percentile(dijkstras, 0.5), Percentile(dijkstras, 0.99));
  fmt::print(
      "lemon from scratch ({} rounds): p50 {:.1f} ms, min {:.1f}; "
      "speedup at p50 {:.1f}x; checker/LEMON mismatches {}\n",
      lemon_times.size(), lemon50, Percentile(lemon_times, 0.0),
      p50 > 0 ? lemon50 / p50 : 0.0, mismatches);
  fmt::print("peak RSS {} MB (includes LEMON and the exported copies)\n",
             PeakRssMb());
  return mismatches == 0 ? 0 : 1;
}

}  // namespace
}  // namespace flowsched::solver

int main(int argc, char** argv) { return flowsched::solver::Run(argc, argv); }
