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
//
// --searches prints each round's Dijkstras and blocking flows
// (IncrementalStats::searches): roots, units, nodes settled, adjacency
// entries scanned, the last distance and the time.
//
// --ab OPTION (anywhere on the line) also runs solver B, a second solver
// with that option of solver A's flipped, on the same rounds:
// two_sided_search, rebalance_leaves or pair_through_sink. Each round both
// solve the same changes, alternately first, must reach the same cost and
// pass the optimality check; the round's B/A time ratio is printed, and at
// the end the sums, the median ratio and each solver's time in searches
// (the pairing passes included) and in blocking flows. A new option to
// compare goes into FlipOption.
// Paired rounds are what make a change of a few percent visible on a shared
// machine, where two runs of one binary minutes apart differ by 20-30%.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "services/common/percentile.h"
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

// Positional argument k: `fallback` when absent, nullopt unless it is
// wholly a number in [lo, hi] (atoi read "12x" as 12 and "abc" as 0).
std::optional<int64_t> IntArg(int argc, char** argv, int k, int64_t fallback,
                              int64_t lo, int64_t hi) {
  if (argc <= k) return fallback;
  int64_t value = 0;
  if (!absl::SimpleAtoi(argv[k], &value) || value < lo || value > hi) {
    return std::nullopt;
  }
  return value;
}

// Flips `name` in `options`; false for an unknown name.
bool FlipOption(const std::string& name, solver::IncrementalOptions& options) {
  if (name == "two_sided_search") {
    options.two_sided_search = !options.two_sided_search;
  } else if (name == "pair_through_sink") {
    options.pair_through_sink = !options.pair_through_sink;
  } else if (name == "rebalance_leaves") {
    options.rebalance_leaves = !options.rebalance_leaves;
  } else {
    return false;
  }
  return true;
}

void ApplyChanges(const solver::McmfProblem& problem,
                  const RoundChanges& changes,
                  solver::IncrementalSolver& solver) {
  for (uint32_t v : changes.changed_nodes) {
    (void)solver.SetSupply(v, problem.supply[v]);
  }
  for (uint32_t a : changes.changed_arcs) {
    const auto& arc = problem.arcs[a];
    (void)solver.SetArc(a, arc.src, arc.dst, arc.capacity, arc.cost);
  }
}

// The paired comparison of --ab: per solver, the sums over the rounds.
struct PairedTally {
  double solve_a = 0, solve_b = 0;
  double search_a = 0, search_b = 0;  // IncrementalStats::searches
  double flow_a = 0, flow_b = 0;
  std::vector<double> ratios;  // per round, B's solve time over A's

  void Add(const solver::IncrementalStats& a,
           const solver::IncrementalStats& b) {
    solve_a += a.solve_ms;
    solve_b += b.solve_ms;
    AddParts(a, search_a, flow_a);
    AddParts(b, search_b, flow_b);
    ratios.push_back(b.solve_ms / a.solve_ms);
  }
  static void AddParts(const solver::IncrementalStats& stats, double& searches,
                       double& flows) {
    for (const solver::SearchRecord& q : stats.searches) {
      (q.kind == solver::SearchRecord::Kind::kBlockingFlow ? flows
                                                           : searches) += q.ms;
    }
  }
};

int Run(int argc, char** argv) {
  // --ab OPTION and --searches, taken out before the positional arguments
  // are read; any other argument starting with "--" is refused.
  std::string ab_option;
  bool print_searches = false;
  for (int i = 1; i < argc;) {
    const std::string flag = argv[i];
    int width = 0;
    if (flag == "--ab") {
      if (i + 1 >= argc) {
        fmt::print(
            stderr,
            "--ab needs an option: two_sided_search, rebalance_leaves or "
            "pair_through_sink\n");
        return 2;
      }
      ab_option = argv[i + 1];
      width = 2;
    } else if (flag == "--searches") {
      print_searches = true;
      width = 1;
    } else if (flag.starts_with("--")) {
      fmt::print(stderr, "unknown flag {} (--ab OPTION, --searches)\n", flag);
      return 2;
    } else {
      ++i;
      continue;
    }
    for (int j = i; j + width < argc; ++j) argv[j] = argv[j + width];
    argc -= width;
  }
  // Refused rather than guessed: a bad value would build an empty network
  // or a sequence without changes and fail somewhere inside.
  const std::string shape_name = argc > 1 ? argv[1] : "ls";
  const std::optional<int64_t> machines =
      IntArg(argc, argv, 2, 12500, 1, 100'000);
  const std::optional<int64_t> rounds = IntArg(argc, argv, 3, 20, 1, 1'000'000);
  double change = 0.01;
  const bool change_ok = argc <= 4 || (absl::SimpleAtod(argv[4], &change) &&
                                       change > 0 && change <= 1);
  const std::optional<int64_t> drain_budget =
      IntArg(argc, argv, 5, solver::IncrementalOptions{}.drain_arc_budget, 0,
             UINT32_MAX);
  // Arguments 6-10 are switches, 0 or 1 (absent: 0).
  bool switch_on[11] = {};
  bool switches_ok = true;
  for (int k = 6; k <= 10; ++k) {
    const std::optional<int64_t> value = IntArg(argc, argv, k, 0, 0, 1);
    switches_ok = switches_ok && value.has_value();
    switch_on[k] = value.value_or(0) == 1;
  }
  if ((shape_name != "quincy" && shape_name != "ls") || !machines || !rounds ||
      !change_ok || !drain_budget || !switches_ok || argc > 11) {
    fmt::print(stderr,
               "usage: incremental_profile quincy|ls [MACHINES 1-100000] "
               "[ROUNDS >= 1] [CHANGE (0, 1]] [DRAIN_BUDGET] [0|1 ...x5] "
               "[--ab OPTION] [--searches] (see the file's header)\n");
    return 2;
  }
  const auto on = [&](int k) { return switch_on[k]; };
  ClusterShape shape;
  shape.shape = shape_name == "quincy" ? NetworkShape::kQuincy
                                       : NetworkShape::kLoadSpreading;
  shape.machines = static_cast<uint32_t>(*machines);
  shape.utilisation = 0.9;
  IncrementalOptions options{.min_change = change, .max_change = change};
  if (on(9)) {
    options.starts = IncrementalOptions::StartModel::kRandomFreeSlot;
  }
  const bool follow_own_flow = on(10);
  ClusterNetwork network(shape, options);
  const solver::McmfProblem& problem = network.problem();
  solver::IncrementalOptions solver_options;
  solver_options.drain_arc_budget = static_cast<uint32_t>(*drain_budget);
  if (on(6)) {
    solver_options.dijkstra_stop =
        solver::IncrementalOptions::DijkstraStop::kFirstDeficit;
  }
  if (on(7)) {
    solver_options.search_side =
        solver::IncrementalOptions::SearchSide::kForward;
  }
  if (on(8)) solver_options.rebalance_leaves = false;
  solver::IncrementalOptions options_b = solver_options;
  if (!ab_option.empty() && !FlipOption(ab_option, options_b)) {
    fmt::print(stderr,
               "--ab takes two_sided_search, rebalance_leaves or "
               "pair_through_sink, not {}\n",
               ab_option);
    return 2;
  }
  const bool paired = !ab_option.empty();
  solver::IncrementalSolver solver(solver_options);
  solver::IncrementalSolver solver_b(options_b);  // stays empty unless paired
  for (solver::IncrementalSolver* each : {&solver, &solver_b}) {
    if (each == &solver_b && !paired) break;
    if (absl::Status s = each->Load(problem); !s.ok()) {
      fmt::print("{}\n", s.ToString());
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
  for (solver::IncrementalSolver* each : {&solver, &solver_b}) {
    if (each == &solver_b && !paired) break;
    if (absl::Status s =
            each->InstallSolution(solution->flow, solution->potentials);
        !s.ok()) {
      fmt::print("install: {}\n", s.ToString());
      return 1;
    }
  }
  PairedTally tally;
  fmt::print("{} nodes {} arcs; cold cost scaling + install {:.1f} ms\n",
             problem.node_count, problem.arcs.size(), MsSince(t));
  std::vector<double> apply_ms, solve_ms, check_ms;
  for (int64_t r = 0; r < *rounds; ++r) {
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
    ApplyChanges(problem, changes, solver);
    apply_ms.push_back(MsSince(t));
    if (paired) ApplyChanges(problem, changes, solver_b);
    // Alternately first, so that neither always meets the caches the
    // other left.
    const bool b_first = paired && r % 2 == 1;
    absl::StatusOr<solver::IncrementalResult> result_b;
    if (b_first) result_b = solver_b.Solve();
    auto result = solver.Solve();
    if (paired && !b_first) result_b = solver_b.Solve();
    if (!result.ok() || result->outcome != solver::McmfOutcome::kOptimal) {
      fmt::print("round {} failed: {}\n", r,
                 result.ok() ? "not optimal" : result.status().ToString());
      return 1;
    }
    if (paired) {
      if (!result_b.ok() || result_b->total_cost != result->total_cost) {
        fmt::print("round {}: solver B {} (cost {} from A)\n", r + 1,
                   result_b.ok() ? fmt::format("cost {}", result_b->total_cost)
                                 : result_b.status().ToString(),
                   result->total_cost);
        return 1;
      }
      tally.Add(result->stats, result_b->stats);
      fmt::print("ab round {:2}: A {:8.2f} B {:8.2f} B/A {:.3f} | ", r + 1,
                 result->stats.solve_ms, result_b->stats.solve_ms,
                 tally.ratios.back());
      fmt::print("dijkstra A {} B {}\n", result->stats.dijkstra_runs,
                 result_b->stats.dijkstra_runs);
    }
    solve_ms.push_back(result->stats.solve_ms);
    t = Clock::now();
    solver::McmfProblem exported;
    solver::McmfSolution exported_solution;
    std::vector<uint32_t> handles;
    solver.Export(exported, exported_solution, handles);
    bool ok = solver::CheckOptimalFlow(exported, exported_solution).ok();
    if (paired) {
      // B's cost equals A's; its certificate must hold too (flows and
      // potentials), or the next round would repair from a broken state.
      solver_b.Export(exported, exported_solution, handles);
      ok = ok && solver::CheckOptimalFlow(exported, exported_solution).ok();
    }
    check_ms.push_back(MsSince(t));
    const auto& s = result->stats;
    fmt::print(
        "round {:2}: nodes {:5} arcs {:6} arr {:4} done {:4} start {:4} fail "
        "{} "
        "| apply {:6.2f} solve {:8.2f} check {:6.1f}{} | dijkstra {:4} touched "
        "{:9} aug {:6} tree {:5} repaired {:5} drained {:5} backward {:4} "
        "flows {:4}\n",
        r + 1, changes.changed_nodes.size(), changes.changed_arcs.size(),
        changes.arrivals, changes.completions, changes.starts,
        changes.failed_machine >= 0 ? 1 : 0, apply_ms.back(), s.solve_ms,
        check_ms.back(), ok ? "" : " CHECK FAILED", s.dijkstra_runs,
        s.nodes_touched, s.augmentations, s.tree_augmentations, s.arcs_repaired,
        s.drained_units, s.backward_runs, s.blocking_flows);
    if (print_searches) {
      for (const solver::SearchRecord& q : s.searches) {
        using Kind = solver::SearchRecord::Kind;
        if (q.kind == Kind::kBlockingFlow) {
          fmt::print(
              "    flow      roots {:4} paths {:5} bfs nodes {:7}          "
              "{:7.2f} ms\n",
              q.roots, q.units, q.nodes, q.ms);
          continue;
        }
        // A pairing pass counts its searches and its farthest partner.
        const bool pass =
            q.kind == Kind::kPairBackward || q.kind == Kind::kPairForward;
        const bool backward =
            q.kind == Kind::kBackward || q.kind == Kind::kPairBackward;
        fmt::print(
            "    {}{} {} {:4} units {:5} settled {:7} entries {:8} {} {:4} "
            "{:7.2f} ms\n",
            pass ? "pair " : "", backward ? "backward" : "forward ",
            pass ? "searches" : "roots", q.roots, q.units, q.nodes, q.entries,
            pass ? "farthest" : "last", q.last_distance, q.ms);
      }
    }
  }
  if (paired) {
    fmt::print("ab {}: solve sum A {:.0f} B {:.0f} ms, B/A {:.3f}; ", ab_option,
               tally.solve_a, tally.solve_b, tally.solve_b / tally.solve_a);
    fmt::print("median round B/A {:.3f}; ", Percentile(tally.ratios, 0.5));
    fmt::print(
        "searches A {:.0f} B {:.0f} ms, blocking flows A {:.0f} B {:.0f} ms\n",
        tally.search_a, tally.search_b, tally.flow_a, tally.flow_b);
  }
  fmt::print(
      "apply p50 {:.2f}; solve p50 {:.2f} p90 {:.2f} p99 {:.2f}; check p50 "
      "{:.1f} ms\n",
      Percentile(apply_ms, 0.5), Percentile(solve_ms, 0.5),
      Percentile(solve_ms, 0.9), Percentile(solve_ms, 0.99),
      Percentile(check_ms, 0.5));
  return 0;
}

}  // namespace
}  // namespace flowsched::bench

int main(int argc, char** argv) { return flowsched::bench::Run(argc, argv); }
