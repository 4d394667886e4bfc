#pragma once

// A decoded, syntactically valid cluster event. Whether it fits the current
// state (known ids, no duplicates) is decided by ClusterState::Apply.

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "services/cluster/cluster_types.h"

namespace flowsched::cluster {

struct JobSubmitted {
  JobId job;
  std::string name;
  int32_t priority = 0;
  std::vector<TaskSpec> tasks;
  bool different_machines = false;  // see Job::different_machines
  uint32_t min_members = 0;         // see Job::min_members
};
struct TaskSubmitted {
  JobId job;
  TaskSpec task;
};
struct TaskFinished {
  JobId job;
  TaskId task;
};
struct TaskFailed {
  JobId job;
  TaskId task;
  std::string reason;
};
struct TaskKilled {
  JobId job;
  TaskId task;
};
struct TaskUpdated {
  JobId job;
  TaskId task;
  Resources request;
  int32_t priority = 0;
};
struct MachineAdded {
  MachineId machine;
  std::string rack;
  Resources capacity;
  uint32_t task_slots = 0;
  std::map<std::string, std::string> labels;
  std::vector<AcceleratorGroup> accelerators;
};
struct MachineRemoved {
  MachineId machine;
};
struct MachineFailed {
  MachineId machine;
  std::string reason;
};
struct MachineUsage {
  MachineId machine;
  Resources used;
};
struct TaskUsage {
  JobId job;
  TaskId task;
  Resources used;
};
// A time tick in the log; changes no state (see events.proto).
struct Tick {};
// Admin event: switch the scheduling policy. Changes no cluster state; the
// graph manager acts on it (see events.proto).
struct SetPolicy {
  std::string policy;
};

using EventBody =
    std::variant<JobSubmitted, TaskSubmitted, TaskFinished, TaskFailed,
                 TaskKilled, TaskUpdated, MachineAdded, MachineRemoved,
                 MachineFailed, MachineUsage, TaskUsage, Tick, SetPolicy>;

struct ClusterEvent {
  std::string event_id;
  int64_t event_time_us = 0;
  std::string source;
  EventBody body;
};

}  // namespace flowsched::cluster
