#include "services/baselines/filter_score_scheduler.h"

#include <algorithm>
#include <map>

#include "services/baselines/scheduling_util.h"

namespace flowsched::baselines {
namespace {

double FreeFraction(int64_t capacity, int64_t allocated, int64_t request) {
  const int64_t used = allocated + std::max<int64_t>(request, 0);
  return static_cast<double>(capacity - used) / static_cast<double>(capacity);
}

double LeastAllocated(const cluster::Machine& machine,
                      const cluster::Resources& request) {
  double sum = 0;
  int dimensions = 0;
  if (machine.capacity.cpu_millis > 0) {
    sum += FreeFraction(machine.capacity.cpu_millis,
                        machine.allocated.cpu_millis, request.cpu_millis);
    ++dimensions;
  }
  if (machine.capacity.memory_bytes > 0) {
    sum += FreeFraction(machine.capacity.memory_bytes,
                        machine.allocated.memory_bytes, request.memory_bytes);
    ++dimensions;
  }
  if (dimensions > 0) return sum / dimensions;
  // Only reached for a machine with a free slot, so task_slots > 0.
  return static_cast<double>(machine.free_slots() - 1) /
         static_cast<double>(machine.task_slots);
}

double Fraction(int64_t bytes, int64_t total) {
  return total > 0 ? static_cast<double>(bytes) / static_cast<double>(total)
                   : 0.0;
}

}  // namespace

std::vector<BaselinePlacement> FilterScoreScheduler::Schedule(
    const cluster::ClusterState& state) {
  // Scratch copies so later tasks of the round see earlier bindings.
  std::map<MachineId, cluster::Machine> machines = state.machines();
  std::vector<BaselinePlacement> placements;
  for (const auto& [task_id, task] : state.tasks()) {
    if (task.running()) continue;
    const cluster::InputLocation locality = ComputeLocality(task, state);
    cluster::Machine* best = nullptr;
    double best_score = 0;
    for (auto& [machine_id, machine] : machines) {
      if (!CanPlace(machine, task)) continue;
      double score = LeastAllocated(machine, task.spec.request);
      if (const int64_t on = locality.OnMachine(machine_id); on > 0) {
        score += kMachineLocalityWeight * Fraction(on, locality.total);
      }
      if (const int64_t in = locality.InRack(machine.rack); in > 0) {
        score += kRackLocalityWeight * Fraction(in, locality.total);
      }
      // Strictly greater: machines are visited in id order, so ties keep
      // the lowest id.
      if (best == nullptr || score > best_score) {
        best = &machine;
        best_score = score;
      }
    }
    if (best == nullptr) continue;
    Reserve(*best, task);
    placements.push_back({task_id, best->id});
  }
  return placements;
}

}  // namespace flowsched::baselines
