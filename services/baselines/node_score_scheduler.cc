#include "services/baselines/node_score_scheduler.h"

#include <algorithm>

#include "services/baselines/scheduling_util.h"
#include "services/cluster/gpu_fragmentation.h"

namespace flowsched::baselines {

std::vector<BaselinePlacement> NodeScoreScheduler::Schedule(
    const cluster::ClusterState& state) {
  BeginRound(state);
  // Machines a task of this round was booked on, as booked.
  std::map<MachineId, cluster::Machine> scratch;
  std::vector<BaselinePlacement> placements;
  for (const auto& [task_id, task] : state.tasks()) {
    if (task.running()) continue;
    MachineId best;
    std::optional<NodeChoice> best_choice;
    std::vector<cluster::DeviceShare> best_devices;
    for (const auto& [machine_id, original] : state.machines()) {
      auto it = scratch.find(machine_id);
      const cluster::Machine& machine =
          it == scratch.end() ? original : it->second;
      cluster::Fit fit = cluster::FitTask(machine, task.spec);
      if (!fit.fits()) continue;
      std::optional<NodeChoice> choice = Evaluate(machine, task, fit);
      // Strictly less: machines come in id order, ties keep the lowest.
      if (!choice.has_value() ||
          (best_choice.has_value() && !(choice->cost < best_choice->cost))) {
        continue;
      }
      best = machine_id;
      best_devices =
          choice->devices.empty() ? std::move(fit.devices) : choice->devices;
      best_choice = std::move(choice);
    }
    if (!best_choice.has_value()) continue;
    auto it = scratch.find(best);
    if (it == scratch.end()) {
      it = scratch.emplace(best, *state.FindMachine(best)).first;
    }
    it->second.running.insert(task_id);
    cluster::BookTask(it->second, task.spec, best_devices);
    placements.push_back({task_id, best, std::move(best_devices)});
  }
  return placements;
}

}  // namespace flowsched::baselines
