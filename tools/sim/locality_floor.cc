#include "tools/sim/locality_floor.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "services/solver/flow_checker.h"
#include "services/solver/mcmf_problem.h"
#include "services/solver/solver_registry.h"

namespace flowsched::sim {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
// Cost scaling needs (n + 1)^2 max|cost| < 2^57; 150,000 tasks allow 2^22.
constexpr int64_t kMaxTaskMiB = int64_t{1} << 20;

int64_t CeilMiB(int64_t bytes) { return (bytes + kMiB - 1) / kMiB; }

bool PresentAtZero(const SimMachine& m) {
  return m.add_us <= 0 && (m.remove_us == kForever || m.remove_us > 0);
}

// A task's input by rack: bytes in each rack holding some, and its total
// (bytes no entry places, or placed on a machine absent at time 0, are in no
// rack). Mirrors InputLocality, which the simulator's measure uses.
struct TaskInput {
  std::vector<std::pair<uint32_t, int64_t>> in_rack;
  int64_t total = 0;
};

}  // namespace

absl::StatusOr<LocalityFloor> ComputeLocalityFloor(const Workload& workload,
                                                   uint32_t slots_per_machine) {
  absl::flat_hash_map<std::string, uint32_t> rack_index;
  absl::flat_hash_map<uint64_t, uint32_t> machine_rack;
  std::vector<int64_t> rack_slots;
  for (const SimMachine& m : workload.machines) {
    if (!PresentAtZero(m)) continue;
    auto [it, inserted] =
        rack_index.try_emplace(m.rack, static_cast<uint32_t>(rack_slots.size()));
    if (inserted) rack_slots.push_back(0);
    rack_slots[it->second] += slots_per_machine;
    machine_rack[m.id] = it->second;
  }

  LocalityFloor floor;
  std::vector<TaskInput> inputs;
  for (const SimTask& t : workload.tasks) {
    if (t.submit_us != 0) continue;
    TaskInput input;
    int64_t placed_bytes = 0;
    for (const cluster::DataLocality& entry : t.input) {
      if (entry.bytes <= 0) continue;
      uint32_t rack = 0;
      if (entry.machine.value() != 0) {
        auto it = machine_rack.find(entry.machine.value());
        if (it == machine_rack.end()) continue;
        rack = it->second;
      } else {
        auto it = rack_index.find(entry.rack);
        if (it == rack_index.end()) continue;
        rack = it->second;
      }
      auto same = std::find_if(input.in_rack.begin(), input.in_rack.end(),
                               [&](const auto& p) { return p.first == rack; });
      if (same == input.in_rack.end()) {
        input.in_rack.emplace_back(rack, entry.bytes);
      } else {
        same->second += entry.bytes;
      }
      placed_bytes += entry.bytes;
    }
    input.total = std::max(t.input_bytes, placed_bytes);
    if (CeilMiB(input.total) > kMaxTaskMiB) {
      return absl::InvalidArgumentError(absl::StrCat(
          "locality floor: task ", t.task_id, " reads ", input.total,
          " bytes, more than the ", kMaxTaskMiB, " MiB it can price"));
    }
    inputs.push_back(std::move(input));
  }
  floor.tasks = inputs.size();
  if (inputs.empty()) return floor;

  // Nodes: tasks, racks, A (any rack), S.
  const auto tasks = static_cast<uint32_t>(inputs.size());
  const auto racks = static_cast<uint32_t>(rack_slots.size());
  const uint32_t any = tasks + racks;
  const uint32_t sink = any + 1;
  solver::McmfProblem problem;
  problem.node_count = sink + 1;
  problem.supply.assign(problem.node_count, 0);
  int64_t max_cost = 0;
  for (const TaskInput& input : inputs) {
    max_cost = std::max(max_cost, CeilMiB(input.total));
  }
  // Arc i of task t: its racks in order, then A, then unplaced.
  std::vector<size_t> first_arc(tasks);
  for (uint32_t t = 0; t < tasks; ++t) {
    problem.supply[t] = 1;
    first_arc[t] = problem.arcs.size();
    for (const auto& [rack, bytes] : inputs[t].in_rack) {
      problem.arcs.push_back({t, tasks + rack, 1,
                              CeilMiB(inputs[t].total - bytes)});
    }
    problem.arcs.push_back({t, any, 1, CeilMiB(inputs[t].total)});
    problem.arcs.push_back({t, sink, 1, max_cost + 1});
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
    return absl::InternalError(
        absl::StrCat("locality floor: the solution failed its check: ",
                     s.message()));
  }
  for (uint32_t t = 0; t < tasks; ++t) {
    const TaskInput& input = inputs[t];
    const size_t k = input.in_rack.size();
    const std::vector<int64_t>& flow = solution->flow;
    if (flow[first_arc[t] + k + 1] > 0) continue;  // unplaced
    ++floor.placed;
    floor.input_bytes += input.total;
    int64_t cross = input.total;  // through A: no input in its rack is priced
    for (size_t i = 0; i < k; ++i) {
      if (flow[first_arc[t] + i] > 0) cross = input.total - input.in_rack[i].second;
    }
    floor.cross_rack_bytes += cross;
  }
  return floor;
}

}  // namespace flowsched::sim
