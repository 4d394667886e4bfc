#include "services/baselines/greedy_scheduler.h"

#include <algorithm>
#include <set>
#include <string>

#include "services/baselines/scheduling_util.h"

namespace flowsched::baselines {

std::map<JobId, int64_t> FairShares(const cluster::ClusterState& state) {
  std::map<JobId, int64_t> demand;  // N_j
  for (const auto& [id, job] : state.jobs()) {
    if (!job.tasks.empty()) {
      demand[id] = static_cast<int64_t>(job.tasks.size());
    }
  }
  std::map<JobId, int64_t> shares;
  if (demand.empty()) return shares;
  const auto slots = static_cast<int64_t>(state.total_slots());
  const int64_t even = slots / static_cast<int64_t>(demand.size());
  int64_t leftover = slots;
  for (const auto& [id, n] : demand) {
    shares[id] = std::min(even, n);
    leftover -= shares[id];
  }
  // Water-filling: hand the leftover out in equal rounds; a job that caps
  // out returns its excess to the next round.
  while (leftover > 0) {
    std::vector<JobId> wanting;
    for (const auto& [id, n] : demand) {
      if (shares[id] < n) wanting.push_back(id);
    }
    if (wanting.empty()) break;
    const int64_t each = leftover / static_cast<int64_t>(wanting.size());
    if (each == 0) {
      for (JobId id : wanting) {
        if (leftover == 0) break;
        ++shares[id];
        --leftover;
      }
      break;
    }
    for (JobId id : wanting) {
      const int64_t add = std::min(each, demand[id] - shares[id]);
      shares[id] += add;
      leftover -= add;
    }
  }
  return shares;
}

namespace {

// A queue in task-id order. Taken tasks stay in the vector and are skipped,
// which is how "leaves every queue" costs O(1) per queue.
using Queue = std::vector<const cluster::Task*>;

bool Prefers(int64_t bytes, int64_t total, double fraction) {
  return bytes > 0 && total > 0 &&
         static_cast<double>(bytes) >= fraction * static_cast<double>(total);
}

}  // namespace

std::vector<BaselinePlacement> GreedyScheduler::Schedule(
    const cluster::ClusterState& state) {
  std::map<MachineId, Queue> machine_queues;
  std::map<std::string, Queue> rack_queues;
  Queue cluster_queue;
  for (const auto& [id, task] : state.tasks()) {
    if (task.running()) continue;
    cluster_queue.push_back(&task);
    const cluster::InputLocation locality = ComputeLocality(task, state);
    for (const auto& [machine, bytes] : locality.on_machine) {
      if (Prefers(bytes, locality.total, kMachinePreferenceFraction)) {
        machine_queues[machine].push_back(&task);
      }
    }
    for (const auto& [rack, bytes] : locality.in_rack) {
      if (Prefers(bytes, locality.total, kRackPreferenceFraction)) {
        rack_queues[rack].push_back(&task);
      }
    }
  }

  std::map<JobId, int64_t> shares;
  std::map<JobId, int64_t> running;
  if (fair_) {
    shares = FairShares(state);
    for (const auto& [id, task] : state.tasks()) {
      if (task.running()) ++running[task.job];
    }
  }

  std::set<TaskId> taken;
  std::map<const Queue*, size_t> queue_front;  // first entry not yet taken
  std::vector<BaselinePlacement> placements;
  for (const auto& [machine_id, original] : state.machines()) {
    cluster::Machine machine = original;  // scratch copy for this round
    const auto eligible = [&](const cluster::Task* task) {
      if (taken.contains(task->spec.id) || !CanPlace(machine, *task)) {
        return false;
      }
      // GF: blocked while the job runs at least its share.
      return !fair_ || running[task->job] < shares[task->job];
    };
    const auto first_eligible =
        [&](const Queue* queue) -> const cluster::Task* {
      if (queue == nullptr) return nullptr;
      // Taken tasks never become eligible again this round: skip the taken
      // prefix for good, so a scan is not quadratic in the queue length.
      size_t& front = queue_front[queue];
      while (front < queue->size() &&
             taken.contains((*queue)[front]->spec.id)) {
        ++front;
      }
      auto it =
          std::find_if(queue->begin() + static_cast<std::ptrdiff_t>(front),
                       queue->end(), eligible);
      return it == queue->end() ? nullptr : *it;
    };
    const auto find_queue = [](auto& queues, const auto& key) -> const Queue* {
      auto it = queues.find(key);
      return it == queues.end() ? nullptr : &it->second;
    };
    const Queue* own = find_queue(machine_queues, machine_id);
    const Queue* rack = find_queue(rack_queues, machine.rack);
    while (machine.free_slots() > 0) {
      const cluster::Task* task = first_eligible(own);
      if (task == nullptr) task = first_eligible(rack);
      if (task == nullptr) task = first_eligible(&cluster_queue);
      if (task == nullptr) break;
      taken.insert(task->spec.id);
      Reserve(machine, *task);
      if (fair_) ++running[task->job];
      placements.push_back({task->spec.id, machine_id});
    }
  }
  return placements;
}

}  // namespace flowsched::baselines
