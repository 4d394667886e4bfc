#pragma once

// Domain types of the cluster state. Protobuf stays at the edge: the event
// decoder turns ClusterEvent messages into these validated structs.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "services/common/strong_id.h"

namespace flowsched::cluster {

struct Resources {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
  int64_t network_bytes_per_sec = 0;
  bool operator==(const Resources&) const = default;
};

// Bytes of a task's input held on one machine, or in one rack when
// machine is 0 (Quincy's locality preferences). Replicas overlap: read
// them through LocateInput (input_locality.h), which says how.
struct DataLocality {
  MachineId machine;
  std::string rack;
  int64_t bytes = 0;
  bool operator==(const DataLocality&) const = default;
};

struct TaskSpec {
  TaskId id;
  Resources request;
  int32_t priority = 0;
  std::vector<DataLocality> input;
  int64_t input_bytes = 0;
  // Label selectors (Kubernetes nodeSelector-style: every key must be
  // present with the value given). Required: the task may only run on
  // machines whose labels match. Preferred: matching machines cost less.
  std::map<std::string, std::string> required_labels;
  std::map<std::string, std::string> preferred_labels;
  bool operator==(const TaskSpec&) const = default;
};

struct Task {
  TaskSpec spec;
  JobId job;
  MachineId machine;  // MachineId{0} while the task waits
  int64_t submit_time_us = 0;
  int64_t start_time_us = 0;
  uint32_t placements = 0;
  Resources used;  // last reported usage
  // Cumulative times since submission, summed across kills (Quincy SOSP
  // 2009, section 4.2 and Appendix: nu and theta must survive preemption for
  // starvation freedom). The totals cover completed periods only; the open
  // period is added by the accessors below.
  int64_t wait_us_total = 0;  // completed waiting periods
  int64_t run_us_total = 0;   // completed running periods
  int64_t wait_start_us = 0;  // start of the current waiting period
  [[nodiscard]] bool running() const { return machine.value() != 0; }
  // Quincy's nu: total microseconds unscheduled up to `now_us`.
  [[nodiscard]] int64_t WaitMicros(int64_t now_us) const {
    return wait_us_total +
           (running() || now_us < wait_start_us ? 0 : now_us - wait_start_us);
  }
  // Quincy's theta: total microseconds run up to `now_us`.
  [[nodiscard]] int64_t RunMicros(int64_t now_us) const {
    return run_us_total +
           (!running() || now_us < start_time_us ? 0 : now_us - start_time_us);
  }
};

struct Job {
  JobId id;
  std::string name;
  int32_t priority = 0;
  std::set<TaskId> tasks;  // ordered: deterministic iteration
  // The Google trace's "different machines" constraint: no two tasks of
  // this job may run on one machine at the same time.
  bool different_machines = false;
  // Tasks of this job placed on a machine; kept by ClusterState (not
  // persisted: RestoreTask rebuilds it), so fair-share policies need not
  // visit every task each round.
  uint32_t running = 0;
};

struct Machine {
  MachineId id;
  std::string rack;
  Resources capacity;
  uint32_t task_slots = 0;
  std::map<std::string, std::string> labels;
  Resources used;              // last reported usage
  // Sum of the requests of the tasks placed here; kept by ClusterState.
  // Not persisted on its own: RestoreTask rebuilds it.
  Resources allocated;
  std::set<TaskId> running;    // tasks placed here
  [[nodiscard]] uint32_t free_slots() const {
    return running.size() >= task_slots
               ? 0
               : task_slots - static_cast<uint32_t>(running.size());
  }
  // Whether `request` fits beside the tasks placed here in CPU and memory.
  // A capacity of 0 in a dimension means the machine did not report it;
  // such a dimension is bounded by slots only.
  [[nodiscard]] bool Fits(const Resources& request) const {
    const auto fits = [](int64_t cap, int64_t alloc, int64_t req) {
      return cap == 0 || req <= 0 || alloc + req <= cap;
    };
    return fits(capacity.cpu_millis, allocated.cpu_millis,
                request.cpu_millis) &&
           fits(capacity.memory_bytes, allocated.memory_bytes,
                request.memory_bytes);
  }
};

}  // namespace flowsched::cluster
