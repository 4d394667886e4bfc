#pragma once

// Domain types of the cluster state. Protobuf stays at the edge: the event
// decoder turns ClusterEvent messages into these validated structs.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "services/common/strong_id.h"

namespace flowsched::cluster {

// Named scalar resources (Kubernetes' extended resources), name -> amount:
// a flat map sorted by name that never holds a zero amount, so equal
// amounts compare equal. (A flat vector, not a std::map: see
// docs/2026-11-26-core-measurements.md.)
class ScalarResources {
 public:
  using Entry = std::pair<std::string, int64_t>;
  ScalarResources() = default;
  // Any order; a name given twice keeps the last amount; zeros are dropped.
  ScalarResources(std::initializer_list<Entry> entries) {
    for (const Entry& entry : entries) Set(entry.first, entry.second);
  }
  // The amount of `name`; 0 when absent.
  [[nodiscard]] int64_t Get(std::string_view name) const {
    auto it = Find(name);
    return it != entries_.end() && it->first == name ? it->second : 0;
  }
  void Set(std::string_view name, int64_t amount) {
    Add(name, amount - Get(name));
  }
  // Adds `delta` to the amount of `name`; an amount reaching 0 is removed.
  void Add(std::string_view name, int64_t delta) {
    if (delta == 0) return;
    auto it = Find(name);
    if (it == entries_.end() || it->first != name) {
      entries_.emplace(it, std::string(name), delta);
    } else if ((it->second += delta) == 0) {
      entries_.erase(it);
    }
  }
  [[nodiscard]] auto begin() const { return entries_.begin(); }
  [[nodiscard]] auto end() const { return entries_.end(); }
  [[nodiscard]] size_t size() const { return entries_.size(); }
  [[nodiscard]] bool empty() const { return entries_.empty(); }
  bool operator==(const ScalarResources&) const = default;

 private:
  std::vector<Entry>::iterator Find(std::string_view name) {
    return std::lower_bound(
        entries_.begin(), entries_.end(), name,
        [](const Entry& e, std::string_view n) { return e.first < n; });
  }
  std::vector<Entry>::const_iterator Find(std::string_view name) const {
    return std::lower_bound(
        entries_.begin(), entries_.end(), name,
        [](const Entry& e, std::string_view n) { return e.first < n; });
  }
  std::vector<Entry> entries_;  // sorted by name, amounts != 0
};

struct Resources {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
  int64_t network_bytes_per_sec = 0;
  // Named scalars; a machine lacking a name has none of it (capacity 0).
  ScalarResources scalars;
  bool operator==(const Resources&) const = default;
};

// Milli-units of a whole accelerator device.
inline constexpr int64_t kMilliPerDevice = 1000;

// Identical accelerator devices as a machine announces them; the machine
// keeps them as one Device each (Machine::devices).
struct AcceleratorGroup {
  uint32_t count = 0;
  std::string model;
  int64_t milli_per_device = kMilliPerDevice;  // 1..1000
  int64_t memory_bytes = 0;                    // per device; 0: not reported
  bool operator==(const AcceleratorGroup&) const = default;
};

// A task's accelerator ask: `whole` devices it uses alone, or `milli`
// (1..999) of one device it shares; never both. None when both are 0.
struct AcceleratorRequest {
  uint32_t whole = 0;
  int64_t milli = 0;
  int64_t memory_bytes = 0;  // device memory needed on each device
  // Acceptable models; nullopt: any model (never an empty list).
  std::optional<std::vector<std::string>> models;
  // Preferred models (soft; empty: no preference), each acceptable.
  std::vector<std::string> preferred_models;
  [[nodiscard]] bool empty() const { return whole == 0 && milli == 0; }
  [[nodiscard]] uint32_t device_count() const { return milli > 0 ? 1 : whole; }
  // Device milli asked for in all: the fraction, or whole devices of
  // kMilliPerDevice each.
  [[nodiscard]] int64_t total_milli() const {
    return milli > 0 ? milli : int64_t{whole} * kMilliPerDevice;
  }
  [[nodiscard]] bool AcceptsModel(const std::string& model) const {
    if (!models.has_value()) return true;
    for (const std::string& m : *models) {
      if (m == model) return true;
    }
    return false;
  }
  [[nodiscard]] bool PrefersModel(const std::string& model) const {
    for (const std::string& m : preferred_models) {
      if (m == model) return true;
    }
    return false;
  }
  bool operator==(const AcceleratorRequest&) const = default;
};

// Part of one device a task holds: the device's index on its machine and
// the milli-units taken (a whole device: its full capacity).
struct DeviceShare {
  uint32_t index = 0;
  int64_t milli = 0;
  bool operator==(const DeviceShare&) const = default;
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
  AcceleratorRequest accelerator;
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
  // The devices of `machine` the task holds, index ascending (assigned by
  // ClusterState through FitTask; empty while waiting or without an
  // accelerator ask). Persisted: a restore rebuilds device use from it.
  std::vector<DeviceShare> devices;
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
  // A gang (> 1): a round places at least this many of the job's tasks or
  // none (core/gang_rule.h). 0 or 1: no gang. Never above the task count
  // the job was submitted with (the decoder refuses that).
  uint32_t min_members = 0;
  [[nodiscard]] bool gang() const { return min_members > 1; }
  // The members a gang must have on machines: min_members, or every task
  // left when fewer are (0 for a job that is no gang).
  [[nodiscard]] uint32_t gang_need() const {
    if (!gang()) return 0;
    const auto live = static_cast<uint32_t>(tasks.size());
    return min_members < live ? min_members : live;
  }
  // Tasks of this job placed on a machine; kept by ClusterState (not
  // persisted: RestoreTask rebuilds it), so fair-share policies need not
  // visit every task each round.
  uint32_t running = 0;
};

// One accelerator device of a machine. The model, capacity and memory are
// announced (MachineAdded); the use is derived from the tasks holding it
// (kept by ClusterState through BookTask, not persisted: RestoreTask
// rebuilds it).
struct Device {
  std::string model;
  int64_t capacity_milli = kMilliPerDevice;
  int64_t memory_bytes = 0;  // 0: not reported
  int64_t used_milli = 0;
  int64_t used_memory_bytes = 0;
  std::set<TaskId> tasks;  // the tasks holding part or all of it
  [[nodiscard]] int64_t free_milli() const {
    return capacity_milli - used_milli;
  }
  bool operator==(const Device&) const = default;
};

struct Machine {
  MachineId id;
  std::string rack;
  Resources capacity;
  uint32_t task_slots = 0;
  std::map<std::string, std::string> labels;
  Resources used;  // last reported usage
  // Sum of the requests of the tasks placed here; kept by ClusterState.
  // Not persisted on its own: RestoreTask rebuilds it.
  Resources allocated;
  std::set<TaskId> running;     // tasks placed here
  std::vector<Device> devices;  // index = device number on the machine
  [[nodiscard]] uint32_t free_slots() const {
    return running.size() >= task_slots
               ? 0
               : task_slots - static_cast<uint32_t>(running.size());
  }
  // Whether a task fits here, and on which devices: FitTask in
  // resource_fit.h, the one fit rule every scheduler and check uses.
  // Fits is its resource part only (CPU, memory, network, named scalars;
  // no slots, no devices), kept for callers that predate FitTask.
  // TODO(#31): move services/flow's tests to FitTask and remove it.
  [[nodiscard]] bool Fits(const Resources& request) const;
};

// The devices a machine announces, one per device, in index order.
[[nodiscard]] inline std::vector<Device> ExpandAccelerators(
    const std::vector<AcceleratorGroup>& groups) {
  std::vector<Device> devices;
  for (const AcceleratorGroup& group : groups) {
    for (uint32_t i = 0; i < group.count; ++i) {
      Device& device = devices.emplace_back();
      device.model = group.model;
      device.capacity_milli = group.milli_per_device;
      device.memory_bytes = group.memory_bytes;
    }
  }
  return devices;
}

}  // namespace flowsched::cluster
