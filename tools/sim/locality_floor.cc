#include "tools/sim/locality_floor.h"

#include <algorithm>
#include <cmath>
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
  [[nodiscard]] int64_t Cross(int64_t in_rack_bytes) const {
    return std::max<int64_t>(input_bytes - in_rack_bytes, 0);
  }
};

}  // namespace

absl::StatusOr<LocalityFloor> ComputeLocalityFloor(const Workload& workload,
                                                   uint32_t slots_per_machine,
                                                   double speedup) {
  if (!(speedup > 0)) {
    return absl::InvalidArgumentError("locality floor: speed-up must be > 0");
  }
  absl::flat_hash_map<std::string, uint32_t> rack_index;
  absl::flat_hash_map<uint64_t, const std::string*> machine_rack;
  std::vector<int64_t> rack_slots;
  for (const SimMachine& m : workload.machines) {
    if (!AtTimeZero(m.add_us, speedup) ||
        (m.remove_us != kForever && AtTimeZero(m.remove_us, speedup))) {
      continue;
    }
    auto [it, inserted] = rack_index.try_emplace(
        m.rack, static_cast<uint32_t>(rack_slots.size()));
    if (inserted) rack_slots.push_back(0);
    rack_slots[it->second] += slots_per_machine;
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
  const auto racks = static_cast<uint32_t>(rack_slots.size());
  const uint32_t any = tasks + racks;
  const uint32_t sink = any + 1;
  int64_t max_bytes = 0;
  for (const TaskInput& input : inputs) {
    max_bytes = std::max(max_bytes, input.Cross(0));
  }
  // A coarser unit only if the solvers' bounds demand it (arc costs at most
  // kMaxArcCost, cost scaling's scaled costs; sizes that share
  // no large divisor at this scale); costs are then rounded down, so the
  // result stays a lower bound, no longer exact.
  const solver::Int128 nodes = solver::Int128{sink} + 2;
  while (max_bytes / unit + 1 > solver::kMaxArcCost ||
         nodes * (solver::Int128{max_bytes / unit} + 1) >= kMaxScaledCost) {
    unit *= 2;
    floor.exact = false;
  }
  const int64_t unplaced_cost = max_bytes / unit + 1;
  solver::McmfProblem problem;
  problem.node_count = sink + 1;
  problem.supply.assign(problem.node_count, 0);
  // Arcs of task t: its racks in order, then A, then unplaced.
  std::vector<size_t> first_arc(tasks);
  for (uint32_t t = 0; t < tasks; ++t) {
    const TaskInput& input = inputs[t];
    problem.supply[t] = 1;
    first_arc[t] = problem.arcs.size();
    for (const auto& [rack, bytes] : input.in_rack) {
      problem.arcs.push_back({t, tasks + rack, 1, input.Cross(bytes) / unit});
    }
    problem.arcs.push_back({t, any, 1, input.Cross(0) / unit});
    problem.arcs.push_back({t, sink, 1, unplaced_cost});
  }
  for (uint32_t r = 0; r < racks; ++r) {
    problem.arcs.push_back({any, tasks + r, rack_slots[r], 0});
    problem.arcs.push_back({tasks + r, sink, rack_slots[r], 0});
  }
  problem.supply[sink] = -static_cast<int64_t>(tasks);

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
  // holding some would be at least as cheap directly).
  const std::vector<int64_t>& flow = solution->flow;
  for (uint32_t t = 0; t < tasks; ++t) {
    const TaskInput& input = inputs[t];
    const size_t k = input.in_rack.size();
    if (flow[first_arc[t] + k + 1] > 0) continue;  // unplaced
    ++floor.placed;
    int64_t in_rack = 0;
    for (size_t i = 0; i < k; ++i) {
      if (flow[first_arc[t] + i] > 0) in_rack = input.in_rack[i].second;
    }
    floor.input_bytes += input.input_bytes;
    floor.cross_rack_bytes += input.Cross(in_rack) / unit * unit;
  }
  return floor;
}

}  // namespace flowsched::sim
