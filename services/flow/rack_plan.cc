#include "services/flow/rack_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string_view>

#include "services/cluster/resource_vector.h"
#include "services/solver/solver_registry.h"

namespace flowsched::flow {
namespace {

// Room is counted in 1/kUnits of the largest machine.
constexpr double kUnits = 10'000;
// A unit's price for reading all of a task's input across racks, before
// dividing by the task's size: 2^20 keeps the rounding of a whole-machine
// task's price under 0.5% and every price far below the solvers' limits.
constexpr double kPriceScale = 1 << 20;
// Prices are counted in 1/kTieSteps, and fewer than half a step (a
// residual cycle may cross two racks' ties) breaks ties toward the less
// wanted rack: reading the same share in two racks, a task plans on the
// one fewer tasks read most from, per unit of its room. A rack wanted
// kMaxTie / kStepsPerPressure times over its room or more is the most
// wanted.
constexpr int64_t kTieSteps = 64;
constexpr int64_t kMaxTie = kTieSteps / 2 - 1;
constexpr double kStepsPerPressure = 8;

// What a shape asks of the plan: its waiting tasks' room, if it reads
// anything. Work without input is not planned: each machine offers it
// room only after the shapes listed in its rack, whatever the plan.
int64_t Supply(const RequestShape& shape, int64_t size) {
  return shape.input_racks.empty() ? 0 : size * shape.waiting;
}

}  // namespace

absl::StatusOr<std::vector<int>> PlanRacks(
    const cluster::ClusterState& state, const std::vector<RequestShape>& shapes,
    int64_t max_tasks_per_machine) {
  std::vector<int> plan(shapes.size(), kNoRack);
  if (std::none_of(shapes.begin(), shapes.end(), [](const RequestShape& s) {
        return s.waiting > 0 && !s.input_racks.empty();
      })) {
    return plan;  // nothing reads anywhere: nothing to plan
  }
  const cluster::ResourceVector max_spec = cluster::ComputeMaxSpec(state);
  uint32_t max_slots = 1;
  for (const auto& [id, machine] : state.machines()) {
    max_slots = std::max(max_slots, machine.task_slots);
  }
  // A rack's room: each machine's least free share, in units.
  std::map<std::string_view, int64_t> room;
  for (const auto& [id, machine] : state.machines()) {
    const cluster::ResourceVector free =
        cluster::Normalised(cluster::ComputeFree(machine), max_spec);
    int64_t slots = machine.free_slots();
    if (max_tasks_per_machine > 0) {
      slots = std::min(slots, max_tasks_per_machine -
                                  static_cast<int64_t>(machine.running.size()));
    }
    double least = static_cast<double>(slots) / max_slots;
    if (machine.capacity.cpu_millis > 0)
      least = std::min(least, free.cpu_millis);
    if (machine.capacity.memory_bytes > 0) {
      least = std::min(least, free.memory_bytes);
    }
    room[machine.rack] += static_cast<int64_t>(std::max(0.0, least) * kUnits);
  }
  std::map<std::string_view, uint32_t> rack_index;
  for (const auto& [rack, units] : room) {
    rack_index.emplace(rack, static_cast<uint32_t>(rack_index.size()));
  }
  // Nodes: shapes, racks, A, S.
  const auto n_shapes = static_cast<uint32_t>(shapes.size());
  const auto racks = static_cast<uint32_t>(rack_index.size());
  const uint32_t any = n_shapes + racks;
  const uint32_t sink = any + 1;
  solver::McmfProblem problem;
  problem.node_count = sink + 1;
  problem.supply.assign(problem.node_count, 0);
  std::vector<int64_t> size(shapes.size());
  int64_t total = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const cluster::ResourceVector ask =
        cluster::Normalised(cluster::RequestVector(shapes[i].ask), max_spec);
    // Clamped: an ask larger than the largest machine fits nowhere anyway.
    const double share =
        std::min(1.0, std::max({ask.cpu_millis, ask.memory_bytes,
                                1.0 / static_cast<double>(max_slots)}));
    size[i] = std::max<int64_t>(1, std::llround(std::ceil(share * kUnits)));
    total += Supply(shapes[i], size[i]);
  }
  // Each rack's pressure: what the shapes reading most there would take of
  // it, over its room.
  std::vector<double> wanted(rack_index.size(), 0);
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (shapes[i].input_racks.empty()) continue;
    auto it = rack_index.find(shapes[i].input_racks[0].rack);
    if (it != rack_index.end()) {
      wanted[it->second] += static_cast<double>(Supply(shapes[i], size[i]));
    }
  }
  std::vector<int64_t> tie(rack_index.size(), 0);
  for (const auto& [rack, r] : rack_index) {
    const double pressure =
        wanted[r] / static_cast<double>(std::max<int64_t>(room[rack], 1));
    tie[r] = std::min<int64_t>(
        kMaxTie, static_cast<int64_t>(pressure * kStepsPerPressure));
  }
  std::vector<size_t> first_arc(shapes.size());
  for (uint32_t i = 0; i < n_shapes; ++i) {
    const RequestShape& shape = shapes[i];
    const int64_t supply = Supply(shape, size[i]);
    problem.supply[i] = supply;
    first_arc[i] = problem.arcs.size();
    const auto price = [&](double outside) -> int64_t {
      return kTieSteps *
             std::llround(std::clamp(outside, 0.0, 1.0) * kPriceScale /
                          static_cast<double>(size[i]));
    };
    for (const RackShare& rack : shape.input_racks) {
      auto it = rack_index.find(rack.rack);
      if (it == rack_index.end()) continue;  // no machine there now
      problem.arcs.push_back({i, n_shapes + it->second, supply,
                              price(1.0 - rack.share) + tie[it->second]});
    }
    problem.arcs.push_back({i, any, supply, price(1.0)});
    // Dearer than any rack: left out only when the room runs out.
    problem.arcs.push_back({i, sink, supply, price(1.0) + kTieSteps});
  }
  for (const auto& [rack, r] : rack_index) {
    problem.arcs.push_back({any, n_shapes + r, room[rack], 0});
    problem.arcs.push_back({n_shapes + r, sink, room[rack], 0});
  }
  problem.supply[sink] = -total;

  auto solver = solver::MakeSolver(solver::kDeterministicSolver);
  if (!solver.ok()) return solver.status();
  auto solution = (*solver)->Solve(problem);
  if (!solution.ok()) return solution.status();
  if (solution->outcome != solver::McmfOutcome::kOptimal) {
    return absl::InternalError(
        "rack plan: the transportation problem has "
        "no solution, although every shape may wait");
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    int64_t most = 0;
    size_t arc = first_arc[i];
    const std::vector<RackShare>& input_racks = shapes[i].input_racks;
    for (size_t r = 0; r < input_racks.size(); ++r) {
      if (!rack_index.contains(input_racks[r].rack)) continue;
      if (solution->flow[arc] > most) {
        most = solution->flow[arc];
        plan[i] = static_cast<int>(r);
      }
      ++arc;
    }
  }
  return plan;
}

}  // namespace flowsched::flow
