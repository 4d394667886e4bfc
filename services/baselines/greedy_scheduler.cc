#include "services/baselines/greedy_scheduler.h"

#include <algorithm>
#include <set>
#include <string>

#include "services/baselines/scheduling_util.h"

namespace flowsched::baselines {

std::vector<std::pair<JobId, int64_t>> FairShareList(
    const cluster::ClusterState& state) {
  std::vector<std::pair<JobId, int64_t>> shares;  // (id, N_j), then A_j
  std::vector<int64_t> demand;                    // N_j, as `shares`
  for (const auto& [id, job] : state.jobs()) {
    if (!job.tasks.empty()) {
      shares.emplace_back(id, 0);
      demand.push_back(static_cast<int64_t>(job.tasks.size()));
    }
  }
  if (shares.empty()) return shares;
  const auto slots = static_cast<int64_t>(state.total_slots());
  const int64_t even = slots / static_cast<int64_t>(shares.size());
  int64_t leftover = slots;
  for (size_t i = 0; i < shares.size(); ++i) {
    shares[i].second = std::min(even, demand[i]);
    leftover -= shares[i].second;
  }
  // Water-filling: hand the leftover out in equal rounds; a job that caps
  // out returns its excess to the next round.
  std::vector<size_t> wanting;
  while (leftover > 0) {
    wanting.clear();
    for (size_t i = 0; i < shares.size(); ++i) {
      if (shares[i].second < demand[i]) wanting.push_back(i);
    }
    if (wanting.empty()) break;
    const int64_t each = leftover / static_cast<int64_t>(wanting.size());
    if (each == 0) {
      for (size_t i : wanting) {
        if (leftover == 0) break;
        ++shares[i].second;
        --leftover;
      }
      break;
    }
    for (size_t i : wanting) {
      const int64_t add = std::min(each, demand[i] - shares[i].second);
      shares[i].second += add;
      leftover -= add;
    }
  }
  return shares;
}

std::map<JobId, int64_t> FairShares(const cluster::ClusterState& state) {
  const std::vector<std::pair<JobId, int64_t>> list = FairShareList(state);
  return {list.begin(), list.end()};
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
