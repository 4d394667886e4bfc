#pragma once

// A synthetic workload: machines spread over racks, and jobs of tasks with
// modest CPU and memory requests. Deterministic for a seed, so tests and the
// README's demo see the same workload every time.

#include <cstdint>
#include <vector>

#include "flowsched/v1/events.pb.h"

namespace flowsched::tools {

struct WorkloadSpec {
  uint64_t machines = 100;
  uint32_t slots_per_machine = 4;
  uint64_t racks = 10;
  uint64_t jobs = 30;
  uint64_t tasks_per_job = 10;
  uint64_t first_machine_id = 1;
  uint64_t first_job_id = 1;
  uint64_t first_task_id = 1;
  uint64_t seed = 1;
  int64_t event_time_us = 0;  // 0: leave unset
  // Give each task 1-8 GiB of input split over three random machines (the
  // blocks of a replicated file system), for locality-aware policies.
  bool locality = false;
};

// MachineAdded events for spec.machines machines.
std::vector<v1::ClusterEvent> GenerateMachines(const WorkloadSpec& spec);
// JobSubmitted events for spec.jobs jobs of spec.tasks_per_job tasks.
std::vector<v1::ClusterEvent> GenerateJobs(const WorkloadSpec& spec);

// The partition key of an event: "job/<id>" or "machine/<id>", so the
// events of one entity stay in order.
std::string EventKey(const v1::ClusterEvent& event);

}  // namespace flowsched::tools
