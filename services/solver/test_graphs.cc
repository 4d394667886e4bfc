#include "services/solver/test_graphs.h"

#include <algorithm>
#include <cstddef>
#include <random>
#include <vector>

#include "services/solver/cost_scaling.h"

namespace flowsched::solver::testgen {
namespace {

// std::uniform_*_distribution differ between standard libraries; plain
// modulo arithmetic on mt19937_64 keeps generated problems identical
// everywhere, which matters more here than perfect uniformity.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  // Uniform in [lo, hi].
  int64_t Int(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(engine_() % span);
  }
  uint32_t Index(uint32_t count) {
    return static_cast<uint32_t>(engine_() % count);
  }
  bool Chance(double probability) {
    return static_cast<double>(engine_() >> 11) * 0x1.0p-53 < probability;
  }

 private:
  std::mt19937_64 engine_;
};

std::vector<McmfArc> RandomArcs(Rng& rng, const RandomNetworkOptions& options) {
  std::vector<McmfArc> arcs;
  if (options.node_count == 0) return arcs;
  arcs.reserve(options.arc_count);
  for (uint32_t i = 0; i < options.arc_count; ++i) {
    McmfArc arc;
    if (!arcs.empty() && rng.Chance(options.parallel_arc_fraction)) {
      const McmfArc& earlier =
          arcs[rng.Index(static_cast<uint32_t>(arcs.size()))];
      arc.src = earlier.src;
      arc.dst = earlier.dst;
    } else if (rng.Chance(options.self_loop_fraction)) {
      arc.src = arc.dst = rng.Index(options.node_count);
    } else {
      arc.src = rng.Index(options.node_count);
      arc.dst = rng.Index(options.node_count);
    }
    arc.capacity = rng.Chance(options.zero_capacity_fraction)
                       ? 0
                       : rng.Int(1, options.max_capacity);
    arc.cost = rng.Int(options.min_cost, options.max_cost);
    arcs.push_back(arc);
  }
  return arcs;
}

}  // namespace

McmfProblem RandomFeasibleNetwork(uint64_t seed,
                                  const RandomNetworkOptions& options) {
  Rng rng(seed);
  McmfProblem problem;
  problem.node_count = options.node_count;
  problem.arcs = RandomArcs(rng, options);
  problem.supply.assign(options.node_count, 0);
  for (const McmfArc& arc : problem.arcs) {
    const int64_t flow = rng.Int(0, arc.capacity);
    problem.supply[arc.src] += flow;
    problem.supply[arc.dst] -= flow;
  }
  return problem;
}

McmfProblem RandomSupplyNetwork(uint64_t seed,
                                const RandomNetworkOptions& options,
                                int64_t max_supply) {
  Rng rng(seed);
  McmfProblem problem;
  problem.node_count = options.node_count;
  problem.arcs = RandomArcs(rng, options);
  problem.supply.assign(options.node_count, 0);
  if (options.node_count < 2) return problem;
  // Move units in pairs so the sum stays zero and each |supply| stays small.
  const int pairs = static_cast<int>(options.node_count / 2);
  for (int i = 0; i < pairs; ++i) {
    const uint32_t from = rng.Index(options.node_count);
    const uint32_t to = rng.Index(options.node_count);
    const int64_t amount = rng.Int(1, max_supply);
    if (problem.supply[from] + amount > max_supply ||
        problem.supply[to] - amount < -max_supply) {
      continue;
    }
    problem.supply[from] += amount;
    problem.supply[to] -= amount;
  }
  return problem;
}

McmfProblem ChainNetwork(uint64_t seed, const ChainOptions& options) {
  Rng rng(seed);
  const uint32_t n = std::max<uint32_t>(options.node_count, 20);
  McmfProblem problem;
  problem.node_count = n;
  problem.supply.assign(n, 0);
  int64_t total = 0;
  for (uint32_t k = 0; k < options.endpoints; ++k) {
    const int64_t units = rng.Int(1, 40);
    problem.supply[rng.Index(n / 10)] += units;
    problem.supply[n - 1 - rng.Index(n / 10)] -= units;
    total += units;
  }
  for (uint32_t v = 0; v + 1 < n; ++v) {
    problem.arcs.push_back(
        {.src = v, .dst = v + 1, .capacity = total, .cost = rng.Int(1, 10)});
  }
  const uint32_t max_hop = std::max<uint32_t>(options.max_hop, 2);
  for (uint32_t k = 0; k < options.shortcuts; ++k) {
    const uint32_t hop = 2 + rng.Index(max_hop - 1);
    const uint32_t u = rng.Index(n - std::min(hop, n - 1));
    problem.arcs.push_back({.src = u,
                            .dst = std::min(u + hop, n - 1),
                            .capacity = rng.Int(1, 5),
                            .cost = rng.Int(-5, 8 * int64_t{hop})});
    if (options.back_arcs) {
      const uint32_t back = 1 + rng.Index(5);
      const uint32_t w = back + rng.Index(n - back);
      problem.arcs.push_back({.src = w,
                              .dst = w - back,
                              .capacity = rng.Int(1, 5),
                              .cost = rng.Int(-20, 40)});
    }
  }
  return problem;
}

McmfProblem SchedulingNetwork(uint64_t seed, const SchedulingOptions& options) {
  Rng rng(seed);
  const uint32_t tasks = options.task_count;
  const uint32_t jobs = std::max<uint32_t>(options.job_count, 1);
  const uint32_t racks = std::max<uint32_t>(options.rack_count, 1);
  const uint32_t machines = std::max<uint32_t>(options.machine_count, racks);
  const uint32_t first_job = tasks;
  const uint32_t cluster = first_job + jobs;
  const uint32_t first_rack = cluster + 1;
  const uint32_t first_machine = first_rack + racks;
  const uint32_t sink = first_machine + machines;

  McmfProblem problem;
  problem.node_count = sink + 1;
  problem.supply.assign(problem.node_count, 0);

  // Spread ceil(tasks / utilisation) slots over machines, at least 1 each.
  const auto total_slots = std::max<int64_t>(
      machines, static_cast<int64_t>(
                    static_cast<double>(tasks) / options.utilisation + 0.999));
  std::vector<int64_t> slots(machines, total_slots / machines);
  for (int64_t i = 0; i < total_slots % machines; ++i) {
    ++slots[static_cast<size_t>(i)];
  }
  std::vector<int64_t> rack_slots(racks, 0);
  for (uint32_t m = 0; m < machines; ++m) rack_slots[m % racks] += slots[m];

  std::vector<int64_t> job_size(jobs, 0);
  for (uint32_t t = 0; t < tasks; ++t) {
    const uint32_t job = t % jobs;
    ++job_size[job];
    problem.supply[t] = 1;
    problem.arcs.push_back({t, first_job + job, 1, rng.Int(500, 800)});
    problem.arcs.push_back({t, cluster, 1, rng.Int(100, 300)});
    const auto preferences =
        static_cast<uint32_t>(rng.Int(0, options.max_preferences));
    for (uint32_t p = 0; p < preferences; ++p) {
      if (rng.Chance(0.7)) {
        problem.arcs.push_back(
            {t, first_machine + rng.Index(machines), 1, rng.Int(0, 150)});
      } else {
        problem.arcs.push_back(
            {t, first_rack + rng.Index(racks), 1, rng.Int(50, 200)});
      }
    }
  }
  for (uint32_t j = 0; j < jobs; ++j) {
    const auto capacity = static_cast<int64_t>(
        static_cast<double>(job_size[j]) * options.unscheduled_fraction);
    problem.arcs.push_back({first_job + j, sink, capacity, 0});
  }
  for (uint32_t r = 0; r < racks; ++r) {
    problem.arcs.push_back(
        {cluster, first_rack + r, rack_slots[r], rng.Int(0, 20)});
  }
  for (uint32_t m = 0; m < machines; ++m) {
    problem.arcs.push_back(
        {first_rack + m % racks, first_machine + m, slots[m], rng.Int(0, 50)});
    problem.arcs.push_back({first_machine + m, sink, slots[m], 0});
  }
  problem.supply[sink] = -static_cast<int64_t>(tasks);
  return problem;
}

WarmStartPoint PerturbedOptimum(const McmfProblem& problem, uint64_t seed) {
  Rng rng(seed ^ 0x5eed'57a7'0000'0001ULL);
  McmfProblem changed = problem;
  for (McmfArc& arc : changed.arcs) {
    if (rng.Chance(0.2)) {
      arc.cost = std::clamp<int64_t>(arc.cost + rng.Int(-20, 20), -kMaxArcCost,
                                     kMaxArcCost);
    }
    if (rng.Chance(0.1)) arc.capacity = rng.Int(0, arc.capacity + 3);
  }
  WarmStartPoint point;
  auto solution = CostScaling().Solve(changed);
  if (solution.ok() && solution->outcome == McmfOutcome::kOptimal) {
    point.flow = std::move(solution->flow);
    point.potentials = std::move(solution->potentials);
    return point;
  }
  for (const McmfArc& arc : problem.arcs) {
    point.flow.push_back(rng.Int(0, arc.capacity + 1));
  }
  for (uint32_t v = 0; v < problem.node_count; ++v) {
    point.potentials.push_back(rng.Int(-1000, 1000));
  }
  return point;
}

}  // namespace flowsched::solver::testgen
