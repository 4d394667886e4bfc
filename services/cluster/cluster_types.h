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
// machine is 0 (Quincy's locality preferences).
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
  [[nodiscard]] bool running() const { return machine.value() != 0; }
};

struct Job {
  JobId id;
  std::string name;
  int32_t priority = 0;
  std::set<TaskId> tasks;  // ordered: deterministic iteration
};

struct Machine {
  MachineId id;
  std::string rack;
  Resources capacity;
  uint32_t task_slots = 0;
  std::map<std::string, std::string> labels;
  Resources used;              // last reported usage
  std::set<TaskId> running;    // tasks placed here
  [[nodiscard]] uint32_t free_slots() const {
    return running.size() >= task_slots
               ? 0
               : task_slots - static_cast<uint32_t>(running.size());
  }
};

}  // namespace flowsched::cluster
