#include "tools/sim/locality_floor.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "services/cluster/input_locality.h"
#include "services/solver/flow_checker.h"
#include "services/solver/int128.h"
#include "services/solver/mcmf_problem.h"
#include "services/solver/solver_registry.h"
#include "tools/sim/simulator.h"

namespace flowsched::sim {
namespace {

// Sizes above this are refused: sums of a task's entries stay far from
// int64's limit.
constexpr int64_t kMaxBytes = int64_t{1} << 50;
// Cost scaling, the deterministic solver, scales costs by n + 1 and needs
// its scaled prices within 2^60. Every path here has at most three arcs, so
// potentials spread over a few max|cost|; n * (max|cost| + 1) below 2^56
// leaves a factor 16 for that. (Until 2026-11-25 cost scaling refused
// (n + 1)^2 max|cost| >= 2^57 up front, and costs were coarsened to fit.)
constexpr solver::Int128 kMaxScaledCost = solver::Int128{1} << 56;

// Present when the simulation starts at speed-up `speedup` (its Scale()).
bool AtTimeZero(int64_t t_us, double speedup) {
  return std::llround(static_cast<double>(t_us) / speedup) <= 0;
}

// A task's input by rack, as the simulator's InputLocality counts it
// (cluster::LocateInput over the machines present at time 0): on rack l
// the task reads T - B_l across racks out of T.
struct TaskInput {
  std::vector<std::pair<uint32_t, int64_t>> in_rack;  // (rack, B_l)
  int64_t input_bytes = 0;                            // T
  int64_t size = 1;  // of its rack's capacity it takes (>= 0)
  [[nodiscard]] int64_t Cross(int64_t in_rack_bytes) const {
    return std::max<int64_t>(input_bytes - in_rack_bytes, 0);
  }
};

// Costs per unit of size are scaled by at most this before rounding down
// (FloorResource): 2^24 keeps the rounding under 0.4% of a 64-core task's
// price per milli-CPU.
constexpr int64_t kMaxPriceScale = int64_t{1} << 24;

// A machine that does not report the resource: the fit rule does not
// bound it by that resource, so neither does the floor.
constexpr int64_t kUnbounded = -1;
// Sizes summing to this or more are refused: no unit makes their costs fit.
constexpr int64_t kMaxTotalSize = int64_t{1} << 60;

// The floor with each task taking `size_of(task)` of its rack and each
// machine giving `capacity_of(machine)` (or kUnbounded); sizes 1 are the
// slot model.
absl::StatusOr<LocalityFloor> SolveFloor(
    const Workload& workload, double speedup,
    const std::function<int64_t(const SimTask&)>& size_of,
    const std::function<int64_t(const SimMachine&)>& capacity_of) {
  if (!(speedup > 0)) {
    return absl::InvalidArgumentError("locality floor: speed-up must be > 0");
  }
  absl::flat_hash_map<std::string, uint32_t> rack_index;
  absl::flat_hash_map<uint64_t, const std::string*> machine_rack;
  std::vector<int64_t> rack_capacity;
  std::vector<bool> rack_unbounded;
  for (const SimMachine& m : workload.machines) {
    if (!AtTimeZero(m.add_us, speedup) ||
        (m.remove_us != kForever && AtTimeZero(m.remove_us, speedup))) {
      continue;
    }
    auto [it, inserted] = rack_index.try_emplace(
        m.rack, static_cast<uint32_t>(rack_capacity.size()));
    if (inserted) {
      rack_capacity.push_back(0);
      rack_unbounded.push_back(false);
    }
    const int64_t capacity = capacity_of(m);
    if (capacity == kUnbounded) {
      rack_unbounded[it->second] = true;
    } else {
      rack_capacity[it->second] += capacity;
    }
    machine_rack[m.id] = &m.rack;
  }

  LocalityFloor floor;
  std::vector<TaskInput> inputs;
  // Every size a cost is made of is a multiple of `unit` (their gcd), so
  // costs counted in units are exact.
  int64_t unit = 0;
  for (const SimTask& t : workload.tasks) {
    if (!AtTimeZero(t.submit_us, speedup)) continue;
    for (const cluster::DataLocality& entry : t.input) {
      if (entry.bytes > kMaxBytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "locality floor: task ", t.task_id, " has an input entry of ",
            entry.bytes, " bytes (limit ", kMaxBytes, ")"));
      }
    }
    const cluster::InputLocation where = cluster::LocateInput(
        t.input, t.input_bytes,
        [&](const cluster::DataLocality& entry) -> const std::string* {
          auto it = machine_rack.find(entry.machine.value());
          return it == machine_rack.end() ? nullptr : it->second;
        });
    TaskInput input;
    input.size = size_of(t);
    input.input_bytes = where.total;
    if (input.input_bytes > kMaxBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("locality floor: task ", t.task_id, " reads ",
                       input.input_bytes, " bytes (limit ", kMaxBytes, ")"));
    }
    for (const auto& [name, bytes] : where.in_rack) {
      auto it = rack_index.find(name);
      if (it != rack_index.end()) input.in_rack.emplace_back(it->second, bytes);
    }
    unit = std::gcd(unit, input.input_bytes);
    for (const auto& [rack, bytes] : input.in_rack) {
      unit = std::gcd(unit, input.Cross(bytes));
    }
    inputs.push_back(std::move(input));
  }
  floor.tasks = inputs.size();
  if (inputs.empty()) return floor;
  if (unit == 0) unit = 1;  // no task reads anything

  // Nodes: tasks, racks, A (any rack), S.
  const auto tasks = static_cast<uint32_t>(inputs.size());
  const auto racks = static_cast<uint32_t>(rack_capacity.size());
  const uint32_t any = tasks + racks;
  const uint32_t sink = any + 1;
  // A task's price per unit of its size for reading `cross` across racks:
  // (cross / unit) * scale / size, rounded down. Sizes of 1 (slots) price
  // whole tasks exactly with scale 1; other sizes split a task over racks
  // and round, so the result is a lower bound.
  bool sized = false;
  solver::Int128 total_size = 0;
  for (const TaskInput& input : inputs) {
    sized = sized || input.size != 1;
    total_size += input.size;
  }
  if (total_size >= kMaxTotalSize) {
    return absl::InvalidArgumentError(
        "locality floor: the tasks' sizes add up to 2^60 or more");
  }
  for (size_t r = 0; r < rack_capacity.size(); ++r) {
    if (rack_unbounded[r]) {
      rack_capacity[r] = static_cast<int64_t>(total_size);
    }
  }
  int64_t scale = sized ? kMaxPriceScale : 1;
  const auto price = [&](const TaskInput& input, int64_t cross) -> int64_t {
    if (input.size == 0) return 0;  // no flow: priced on its own below
    return static_cast<int64_t>(solver::Int128{cross / unit} * scale /
                                input.size);
  };
  const auto max_price = [&]() {
    int64_t most = 0;
    for (const TaskInput& input : inputs) {
      if (input.size > 0) most = std::max(most, price(input, input.Cross(0)));
    }
    return most;
  };
  // A smaller scale, then a coarser unit, only if the solvers' bounds
  // demand it (arc costs at most kMaxArcCost, cost scaling's scaled costs,
  // the total cost within int64); costs are then rounded down, so the
  // result stays a lower bound, no longer exact.
  const solver::Int128 nodes = solver::Int128{sink} + 2;
  int64_t unplaced_cost = max_price() + 1;
  while (unplaced_cost > solver::kMaxArcCost ||
         nodes * unplaced_cost >= kMaxScaledCost ||
         total_size * unplaced_cost >= (solver::Int128{1} << 62)) {
    if (scale > 1) {
      scale /= 2;
    } else {
      unit *= 2;
      floor.exact = false;
    }
    unplaced_cost = max_price() + 1;
  }
  if (sized) floor.exact = false;
  solver::McmfProblem problem;
  problem.node_count = sink + 1;
  problem.supply.assign(problem.node_count, 0);
  // Arcs of task t: its racks in order, then A, then unplaced.
  std::vector<size_t> first_arc(tasks);
  for (uint32_t t = 0; t < tasks; ++t) {
    const TaskInput& input = inputs[t];
    problem.supply[t] = input.size;
    first_arc[t] = problem.arcs.size();
    for (const auto& [rack, bytes] : input.in_rack) {
      problem.arcs.push_back(
          {t, tasks + rack, input.size, price(input, input.Cross(bytes))});
    }
    problem.arcs.push_back({t, any, input.size, price(input, input.Cross(0))});
    problem.arcs.push_back({t, sink, input.size, unplaced_cost});
  }
  for (uint32_t r = 0; r < racks; ++r) {
    problem.arcs.push_back({any, tasks + r, rack_capacity[r], 0});
    problem.arcs.push_back({tasks + r, sink, rack_capacity[r], 0});
  }
  problem.supply[sink] = -static_cast<int64_t>(total_size);

  auto solver = solver::MakeSolver(solver::kDeterministicSolver);
  if (!solver.ok()) return solver.status();
  auto solution = (*solver)->Solve(problem);
  if (!solution.ok()) return solution.status();
  if (auto s = solver::CheckOptimalFlow(problem, *solution); !s.ok()) {
    return absl::InternalError(absl::StrCat(
        "locality floor: the solution failed its check: ", s.message()));
  }
  // The priced cross-rack input of the optimal assignment (exact when
  // `floor.exact`), over the input the simulator's measure would count for
  // it. A task routed through A sits in a rack without its input (a rack
  // holding some would be at least as cheap directly). A task of size 0
  // takes no room: it reads what its best rack lacks.
  const std::vector<int64_t>& flow = solution->flow;
  solver::Int128 priced = 0;  // in unit / scale
  for (uint32_t t = 0; t < tasks; ++t) {
    const TaskInput& input = inputs[t];
    const size_t k = input.in_rack.size();
    if (flow[first_arc[t] + k + 1] > 0) continue;  // (partly) unplaced
    ++floor.placed;
    floor.input_bytes += input.input_bytes;
    if (input.size == 0) {
      int64_t in_rack = 0;
      for (const auto& [rack, bytes] : input.in_rack) {
        in_rack = std::max(in_rack, bytes);
      }
      priced += solver::Int128{input.Cross(in_rack) / unit} * scale;
      continue;
    }
    for (size_t i = 0; i <= k; ++i) {
      priced += solver::Int128{flow[first_arc[t] + i]} *
                problem.arcs[first_arc[t] + i].cost;
    }
  }
  floor.cross_rack_bytes = static_cast<int64_t>(priced * unit / scale);
  return floor;
}

}  // namespace

absl::StatusOr<LocalityFloor> ComputeLocalityFloor(const Workload& workload,
                                                   uint32_t slots_per_machine,
                                                   double speedup) {
  return SolveFloor(
      workload, speedup, [](const SimTask&) { return int64_t{1}; },
      [&](const SimMachine&) { return int64_t{slots_per_machine}; });
}

absl::StatusOr<LocalityFloor> ComputeLocalityFloor(const Workload& workload,
                                                   FloorResource resource,
                                                   double speedup) {
  // Sizes as the simulator's cpu-mem model turns them into requests; memory
  // in MiB, tasks rounded down and machines up, so it stays a relaxation.
  constexpr int64_t kMiB = int64_t{1} << 20;
  const auto cpu = CpuMillis;
  const auto memory = MemoryBytes;
  if (resource == FloorResource::kCpu) {
    return SolveFloor(
        workload, speedup,
        [&](const SimTask& t) { return std::max<int64_t>(cpu(t.cpu), 0); },
        [&](const SimMachine& m) {
          return cpu(m.cpu) > 0 ? cpu(m.cpu) : kUnbounded;
        });
  }
  return SolveFloor(
      workload, speedup,
      [&](const SimTask& t) {
        return std::max<int64_t>(memory(t.memory), 0) / kMiB;
      },
      [&](const SimMachine& m) {
        return memory(m.memory) > 0 ? (memory(m.memory) + kMiB - 1) / kMiB
                                    : kUnbounded;
      });
}

}  // namespace flowsched::sim
