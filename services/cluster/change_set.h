#pragma once

// The entities an applied event or decision touched. The graph manager hands
// it to the network updater, which re-derives exactly those parts of the flow
// network; an entity in the set that no longer exists is removed from it.

#include <set>

#include "services/common/strong_id.h"

namespace flowsched::cluster {

struct ChangeSet {
  std::set<JobId> jobs;
  std::set<TaskId> tasks;
  std::set<MachineId> machines;

  [[nodiscard]] bool empty() const {
    return jobs.empty() && tasks.empty() && machines.empty();
  }
  void Merge(const ChangeSet& other) {
    jobs.insert(other.jobs.begin(), other.jobs.end());
    tasks.insert(other.tasks.begin(), other.tasks.end());
    machines.insert(other.machines.begin(), other.machines.end());
  }
  void Clear() {
    jobs.clear();
    tasks.clear();
    machines.clear();
  }
};

}  // namespace flowsched::cluster
