#pragma once

// A small cluster for the core's tests: `machines` machines of `slots`
// slots in racks of two, and job 1 of `tasks` tasks, all waiting.

#include <cstdint>
#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "services/cluster/change_set.h"
#include "services/cluster/cluster_state.h"
#include "services/core/policy_network.h"

namespace flowsched::core {

inline void BuildSmallCluster(uint64_t machines, uint32_t slots, uint64_t tasks,
                              cluster::ClusterState& state,
                              cluster::ChangeSet& changes) {
  const auto event = [](cluster::EventBody body) {
    return cluster::ClusterEvent{"e", 0, "test", std::move(body)};
  };
  for (uint64_t m = 1; m <= machines; ++m) {
    cluster::MachineAdded added;
    added.machine = MachineId(m);
    added.rack = "r" + std::to_string(m % 2);
    added.task_slots = slots;
    state.Apply(event(added), 0, changes).IgnoreError();
  }
  cluster::JobSubmitted job;
  job.job = JobId(1);
  job.name = "j";
  for (uint64_t t = 1; t <= tasks; ++t) {
    cluster::TaskSpec spec;
    spec.id = TaskId(t);
    job.tasks.push_back(spec);
  }
  state.Apply(event(job), 0, changes).IgnoreError();
}

// A small cluster and a PolicyNetwork built for it.
class SmallClusterTest : public ::testing::Test {
 protected:
  // BuildSmallCluster, then `policy` adopted and synced at time 0.
  void Build(uint64_t machines, uint32_t slots, uint64_t tasks,
             std::string_view policy = "load-spreading") {
    BuildSmallCluster(machines, slots, tasks, state_, changes_);
    ASSERT_TRUE(network_.Adopt(policy).ok());
    ASSERT_TRUE(network_.Sync(changes_, state_, 0).ok());
    changes_.Clear();
  }

  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
  PolicyNetwork network_;
};

}  // namespace flowsched::core
