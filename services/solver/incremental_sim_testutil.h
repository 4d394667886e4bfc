#pragma once

// Test and benchmark helper for IncrementalSolver: a scheduling-shaped
// network (test_graphs.h SchedulingNetwork layout) that evolves through
// random events -- tasks arriving and finishing, machines failing and
// recovering, cost, capacity and supply changes -- and mirrors every change
// into an IncrementalSolver. Header-only and test-only.

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "services/solver/incremental_solver.h"

namespace flowsched::solver::testgen {

struct SimOptions {
  uint32_t machine_count = 20;
  uint32_t rack_count = 4;
  uint32_t job_count = 5;
  uint32_t initial_tasks = 60;
  double utilisation = 0.7;  // initial tasks / total slots
  uint32_t max_preferences = 3;
  // Job aggregator -> sink capacity as a fraction of the job's tasks; below
  // 1 the network can become infeasible.
  double unscheduled_fraction = 1.0;
  // If false, Build sizes the slots for initial_tasks but adds no tasks, so
  // a caller can add them in batches (warm start, as a cluster fills up).
  bool populate = true;
};

// `Network` takes SetSupply, SetArc, RemoveArc and RemoveNode as
// IncrementalSolver does (a test may pass a tee that feeds a checker too).
template <typename Network>
class BasicSchedulingSim {
 public:
  BasicSchedulingSim(uint64_t seed, const SimOptions& options, Network& solver)
      : options_(options), engine_(seed), solver_(solver) {}

  // Node layout: sink 0, cluster aggregator 1, racks, machines, job
  // aggregators, then tasks (ids recycled through a free list).
  absl::Status Build() {
    const uint32_t racks = std::max<uint32_t>(options_.rack_count, 1);
    const uint32_t machines = std::max(options_.machine_count, racks);
    first_rack_ = 2;
    first_machine_ = first_rack_ + racks;
    first_job_ = first_machine_ + machines;
    next_node_ = first_job_ + options_.job_count;
    Check(solver_.SetSupply(kSink, 0));
    Check(solver_.SetSupply(kCluster, 0));
    const auto total_slots = std::max<int64_t>(
        machines,
        static_cast<int64_t>(static_cast<double>(options_.initial_tasks) /
                                 options_.utilisation +
                             0.999));
    machines_.resize(machines);
    rack_slots_ = total_slots * 2;  // X -> rack never binds
    for (uint32_t r = 0; r < racks; ++r) {
      Check(solver_.SetSupply(first_rack_ + r, 0));
      Check(solver_.SetArc(NewHandle(), kCluster, first_rack_ + r, rack_slots_,
                           Int(0, 20)));
    }
    for (uint32_t m = 0; m < machines; ++m) {
      machines_[m].slots = total_slots / machines +
                           (m < static_cast<uint32_t>(total_slots % machines));
      AddMachine(m);
    }
    jobs_.resize(options_.job_count);
    for (uint32_t j = 0; j < options_.job_count; ++j) {
      Check(solver_.SetSupply(first_job_ + j, 0));
      jobs_[j].to_sink = NewHandle();
      Check(solver_.SetArc(jobs_[j].to_sink, first_job_ + j, kSink, 0, 0));
    }
    if (options_.populate) {
      for (uint32_t t = 0; t < options_.initial_tasks; ++t) AddTask();
    }
    return status_;
  }

  void AddTask() {
    uint32_t node;
    if (!free_nodes_.empty()) {
      node = free_nodes_.back();
      free_nodes_.pop_back();
    } else {
      node = next_node_++;
    }
    if (node >= tasks_.size()) tasks_.resize(size_t{node} + 1);
    Task& task = tasks_[node];
    task = Task{};
    task.live = true;
    task.job = Index(options_.job_count);
    task.supply = 1;
    task.pos = static_cast<uint32_t>(live_tasks_.size());
    live_tasks_.push_back(node);
    Check(solver_.SetSupply(node, 1));
    AddTaskArc(node, first_job_ + task.job, Int(500, 800));
    AddTaskArc(node, kCluster, Int(100, 300));
    const auto prefs = static_cast<uint32_t>(Int(0, options_.max_preferences));
    for (uint32_t p = 0; p < prefs; ++p) {
      if (Chance(0.7)) {
        const uint32_t m = Index(static_cast<uint32_t>(machines_.size()));
        if (!machines_[m].live) continue;
        const uint32_t h = AddTaskArc(node, first_machine_ + m, Int(0, 150));
        machines_[m].prefs.push_back(h);
      } else {
        AddTaskArc(node, first_rack_ + Index(RackCount()), Int(50, 200));
      }
    }
    ++jobs_[task.job].tasks;
    UpdateJobArc(task.job);
    SetSinkSupply(sink_demand_ + 1);
  }

  void RemoveRandomTask() {
    if (live_tasks_.empty()) return;
    RemoveTask(live_tasks_[Index(static_cast<uint32_t>(live_tasks_.size()))]);
  }

  void RemoveTask(uint32_t node) {
    Task& task = tasks_[node];
    for (uint32_t h : task.arcs) {
      const uint32_t m = arc_machine_[h];
      if (m != kNone) {
        std::vector<uint32_t>& prefs = machines_[m].prefs;
        prefs.erase(std::find(prefs.begin(), prefs.end(), h));
      }
      Check(solver_.RemoveArc(h));
      FreeHandle(h);
    }
    task.arcs.clear();
    SetSinkSupply(sink_demand_ - task.supply);
    Check(solver_.RemoveNode(node));
    --jobs_[task.job].tasks;
    UpdateJobArc(task.job);
    task.live = false;
    const uint32_t moved = live_tasks_.back();
    live_tasks_[task.pos] = moved;
    tasks_[moved].pos = task.pos;
    live_tasks_.pop_back();
    free_nodes_.push_back(node);
  }

  // Removes the machine's arcs (preference arcs included) and its node.
  void FailRandomMachine() {
    const uint32_t m = Index(static_cast<uint32_t>(machines_.size()));
    Machine& machine = machines_[m];
    if (!machine.live) return;
    for (uint32_t h : machine.prefs) {
      std::vector<uint32_t>& arcs = tasks_[arc_task_[h]].arcs;
      arcs.erase(std::find(arcs.begin(), arcs.end(), h));
      Check(solver_.RemoveArc(h));
      FreeHandle(h);
    }
    machine.prefs.clear();
    Check(solver_.RemoveArc(machine.from_rack));
    Check(solver_.RemoveArc(machine.to_sink));
    FreeHandle(machine.from_rack);
    FreeHandle(machine.to_sink);
    Check(solver_.RemoveNode(first_machine_ + m));
    machine.live = false;
  }

  void RecoverRandomMachine() {
    const uint32_t m = Index(static_cast<uint32_t>(machines_.size()));
    if (!machines_[m].live) AddMachine(m);
  }

  void ChangeRandomTaskCost() {
    if (live_tasks_.empty()) return;
    const Task& task =
        tasks_[live_tasks_[Index(static_cast<uint32_t>(live_tasks_.size()))]];
    const uint32_t h =
        task.arcs[Index(static_cast<uint32_t>(task.arcs.size()))];
    Check(solver_.SetArc(h, arc_src_[h], arc_dst_[h], 1, Int(0, 800)));
  }

  void ChangeRandomMachineCost() {
    const uint32_t m = Index(static_cast<uint32_t>(machines_.size()));
    if (!machines_[m].live) return;
    Check(solver_.SetArc(machines_[m].from_rack, first_rack_ + m % RackCount(),
                         first_machine_ + m, machines_[m].slots, Int(0, 50)));
  }

  void ChangeRandomMachineSlots() {
    const uint32_t m = Index(static_cast<uint32_t>(machines_.size()));
    Machine& machine = machines_[m];
    if (!machine.live) return;
    machine.slots = std::max<int64_t>(0, machine.slots + Int(-3, 3));
    Check(solver_.SetArc(machine.from_rack, first_rack_ + m % RackCount(),
                         first_machine_ + m, machine.slots, Int(0, 50)));
    Check(solver_.SetArc(machine.to_sink, first_machine_ + m, kSink,
                         machine.slots, 0));
  }

  // A task paused (supply 0) or resumed (supply 1); the sink follows.
  void ToggleRandomTaskSupply() {
    if (live_tasks_.empty()) return;
    Task& task =
        tasks_[live_tasks_[Index(static_cast<uint32_t>(live_tasks_.size()))]];
    const uint32_t node = live_tasks_[task.pos];
    task.supply = 1 - task.supply;
    Check(solver_.SetSupply(node, task.supply));
    SetSinkSupply(sink_demand_ + (task.supply == 1 ? 1 : -1));
  }

  void SetUnscheduledFraction(double fraction) {
    options_.unscheduled_fraction = fraction;
    for (uint32_t j = 0; j < jobs_.size(); ++j) UpdateJobArc(j);
  }

  // One random event of any kind.
  void RandomEvent() {
    const int64_t kind = Int(0, 99);
    if (kind < 30) {
      AddTask();
    } else if (kind < 60) {
      RemoveRandomTask();
    } else if (kind < 64) {
      FailRandomMachine();
    } else if (kind < 70) {
      RecoverRandomMachine();
    } else if (kind < 80) {
      ChangeRandomTaskCost();
    } else if (kind < 85) {
      ChangeRandomMachineCost();
    } else if (kind < 92) {
      ChangeRandomMachineSlots();
    } else {
      ToggleRandomTaskSupply();
    }
  }

  size_t task_count() const { return live_tasks_.size(); }
  const absl::Status& status() const { return status_; }
  int64_t Int(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(engine_() %
                                     (static_cast<uint64_t>(hi - lo) + 1));
  }
  uint32_t Index(uint32_t count) {
    return static_cast<uint32_t>(engine_() % count);
  }
  bool Chance(double p) {
    return static_cast<double>(engine_() >> 11) * 0x1.0p-53 < p;
  }

 private:
  static constexpr uint32_t kSink = 0;
  static constexpr uint32_t kCluster = 1;
  static constexpr uint32_t kNone = UINT32_MAX;

  struct Task {
    bool live = false;
    uint32_t job = 0;
    uint32_t pos = 0;  // index in live_tasks_
    int64_t supply = 1;
    std::vector<uint32_t> arcs;
  };
  struct Machine {
    bool live = false;
    int64_t slots = 0;
    uint32_t from_rack = 0;
    uint32_t to_sink = 0;
    std::vector<uint32_t> prefs;  // incoming preference arc handles
  };
  struct Job {
    int64_t tasks = 0;
    uint32_t to_sink = 0;
  };

  uint32_t RackCount() const { return first_machine_ - first_rack_; }

  void Check(const absl::Status& status) {
    if (status_.ok() && !status.ok()) status_ = status;
  }

  uint32_t NewHandle() {
    uint32_t h;
    if (!free_handles_.empty()) {
      h = free_handles_.back();
      free_handles_.pop_back();
    } else {
      h = next_handle_++;
    }
    if (h >= arc_task_.size()) {
      arc_task_.resize(size_t{h} + 1, kNone);
      arc_machine_.resize(size_t{h} + 1, kNone);
      arc_src_.resize(size_t{h} + 1, 0);
      arc_dst_.resize(size_t{h} + 1, 0);
    }
    arc_task_[h] = kNone;
    arc_machine_[h] = kNone;
    return h;
  }
  void FreeHandle(uint32_t h) { free_handles_.push_back(h); }

  uint32_t AddTaskArc(uint32_t task, uint32_t dst, int64_t cost) {
    const uint32_t h = NewHandle();
    arc_task_[h] = task;
    arc_src_[h] = task;
    arc_dst_[h] = dst;
    if (dst >= first_machine_ && dst < first_job_) {
      arc_machine_[h] = dst - first_machine_;
    }
    tasks_[task].arcs.push_back(h);
    Check(solver_.SetArc(h, task, dst, 1, cost));
    return h;
  }

  void AddMachine(uint32_t m) {
    Machine& machine = machines_[m];
    machine.live = true;
    const uint32_t node = first_machine_ + m;
    Check(solver_.SetSupply(node, 0));
    machine.from_rack = NewHandle();
    Check(solver_.SetArc(machine.from_rack, first_rack_ + m % RackCount(), node,
                         machine.slots, Int(0, 50)));
    machine.to_sink = NewHandle();
    Check(solver_.SetArc(machine.to_sink, node, kSink, machine.slots, 0));
  }

  void UpdateJobArc(uint32_t j) {
    const auto capacity = static_cast<int64_t>(
        static_cast<double>(jobs_[j].tasks) * options_.unscheduled_fraction);
    Check(solver_.SetArc(jobs_[j].to_sink, first_job_ + j, kSink, capacity, 0));
  }

  void SetSinkSupply(int64_t demand) {
    sink_demand_ = demand;
    Check(solver_.SetSupply(kSink, -demand));
  }

  SimOptions options_;
  std::mt19937_64 engine_;
  Network& solver_;
  absl::Status status_;

  uint32_t first_rack_ = 0;
  uint32_t first_machine_ = 0;
  uint32_t first_job_ = 0;
  uint32_t next_node_ = 0;
  uint32_t next_handle_ = 0;
  int64_t rack_slots_ = 0;
  int64_t sink_demand_ = 0;
  std::vector<uint32_t> free_nodes_;
  std::vector<uint32_t> free_handles_;
  std::vector<Task> tasks_;  // indexed by node id
  std::vector<uint32_t> live_tasks_;
  std::vector<Machine> machines_;
  std::vector<Job> jobs_;
  std::vector<uint32_t> arc_task_;     // handle -> owning task node
  std::vector<uint32_t> arc_machine_;  // handle -> machine of a pref arc
  std::vector<uint32_t> arc_src_;
  std::vector<uint32_t> arc_dst_;
};

using SchedulingSim = BasicSchedulingSim<IncrementalSolver>;

}  // namespace flowsched::solver::testgen
