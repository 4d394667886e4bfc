#pragma once

// The graph manager's view of the cluster: jobs, tasks, machines and where
// each task runs. Every mutation checks the whole event against the current
// state first and only then changes anything, so a rejected event leaves no
// partial state behind.
//
// Thread-safety: none; owned and used by the graph manager's single loop.

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/cluster/change_set.h"
#include "services/cluster/cluster_event.h"
#include "services/cluster/cluster_types.h"
#include "services/cluster/validation_limits.h"

namespace flowsched::cluster {

class ClusterState {
 public:
  explicit ClusterState(ValidationLimits limits = {}) : limits_(limits) {}
  // Move-only: the load and id indexes point into the machine and task
  // maps, whose nodes a move keeps and a copy would not.
  ClusterState(const ClusterState&) = delete;
  ClusterState& operator=(const ClusterState&) = delete;
  ClusterState(ClusterState&&) = default;
  ClusterState& operator=(ClusterState&&) = default;

  // Applies one decoded event at time `now_us` (used when the event carries
  // no time). Records what it touched in `changes`.
  // Returns AlreadyExists for a duplicate job, task or machine,
  // FailedPrecondition for an unknown job, task or machine or a task that
  // does not belong to the named job, and InvalidArgument for a job that
  // would grow past the task limit. On error nothing changed.
  absl::Status Apply(const ClusterEvent& event, int64_t now_us,
                     ChangeSet& changes);

  // Decisions of a solver round. FailedPrecondition when the decision went
  // stale (the task finished, moved or the machine left, or the task does
  // not fit it: FitTask in resource_fit.h, the message ends with its
  // reason). Place and Migrate assign the devices FitTask picks
  // (Task::devices, Device::tasks); every way off a machine (Preempt,
  // Migrate, finish, failure, kill, machine removal) releases them.
  // Each call closes the task's current waiting or running period at
  // `now_us` (Quincy's cumulative nu and theta, Task::WaitMicros/RunMicros).
  // `devices`, if not empty, are the shares a scheduler chose (FGD picks
  // the device): checked by FitTaskOnDevices and booked as given; empty:
  // FitTask's choice.
  absl::Status Place(TaskId task, MachineId machine, int64_t now_us,
                     ChangeSet& changes,
                     std::span<const DeviceShare> devices = {});
  absl::Status Preempt(TaskId task, int64_t now_us, ChangeSet& changes);
  // As above at the latest time the state has seen (an event, decision or
  // AdvanceTime). Prefer the overload with an explicit time.
  absl::Status Preempt(TaskId task, ChangeSet& changes) {
    return Preempt(task, last_time_us_, changes);
  }
  absl::Status Migrate(TaskId task, MachineId from, MachineId to,
                       int64_t now_us, ChangeSet& changes);

  // Restores entities from storage without any event semantics. Derived
  // use (running sets, allocations, device use) is rebuilt from the tasks:
  // RestoreTask books a running task's stored devices exactly, DataLoss if
  // they do not match its ask, the machine's devices or the room left.
  // REQUIRES: jobs before their tasks, machines before tasks that run there.
  absl::Status RestoreJob(Job job);
  absl::Status RestoreMachine(Machine machine);
  absl::Status RestoreTask(Task task);

  [[nodiscard]] const Job* FindJob(JobId id) const;
  [[nodiscard]] const Task* FindTask(TaskId id) const;
  [[nodiscard]] const Machine* FindMachine(MachineId id) const;

  [[nodiscard]] const std::map<JobId, Job>& jobs() const { return jobs_; }
  // The jobs that are gangs (Job::gang()), so that a round's gang rule
  // need not visit every job.
  [[nodiscard]] const std::set<JobId>& gang_jobs() const { return gang_jobs_; }
  [[nodiscard]] const std::map<TaskId, Task>& tasks() const { return tasks_; }
  [[nodiscard]] const std::map<MachineId, Machine>& machines() const {
    return machines_;
  }
  // A machine with a free slot, ordered by (running tasks, id).
  struct OpenMachine {
    uint32_t running = 0;
    MachineId id;
    const Machine* machine = nullptr;  // in machines()
    bool operator<(const OpenMachine& other) const {
      return running != other.running ? running < other.running : id < other.id;
    }
  };
  // The machines with a free slot, least loaded first and ties in id order:
  // the order policies hand out room in. Kept on every placement, so a
  // policy that needs only the first few machines does not walk them all
  // (O(log machines) per change).
  [[nodiscard]] const std::set<OpenMachine>& open_machines_by_load() const {
    return open_by_load_;
  }
  [[nodiscard]] size_t running_task_count() const { return running_count_; }
  [[nodiscard]] size_t waiting_task_count() const {
    return tasks_.size() - running_count_;
  }
  [[nodiscard]] uint64_t total_slots() const { return total_slots_; }
  [[nodiscard]] const ValidationLimits& limits() const { return limits_; }
  // The latest time passed to any call (never decreases).
  [[nodiscard]] int64_t last_time_us() const { return last_time_us_; }
  void AdvanceTime(int64_t now_us) { SeeTime(now_us); }

 private:
  absl::Status ApplyJobSubmitted(const JobSubmitted& e, int64_t time_us,
                                 ChangeSet& changes);
  absl::Status ApplyTaskSubmitted(const TaskSubmitted& e, int64_t time_us,
                                  ChangeSet& changes);
  absl::Status ApplyTaskEnded(JobId job, TaskId task, bool retry,
                              int64_t time_us, ChangeSet& changes);
  absl::Status ApplyTaskUpdated(const TaskUpdated& e, ChangeSet& changes);
  absl::Status ApplyMachineAdded(const MachineAdded& e, ChangeSet& changes);
  absl::Status ApplyMachineGone(MachineId machine, int64_t time_us,
                                ChangeSet& changes);
  absl::Status ApplyMachineUsage(const MachineUsage& e, ChangeSet& changes);
  absl::Status ApplyTaskUsage(const TaskUsage& e);

  // Finds a task and checks that it belongs to `job`.
  absl::StatusOr<Task*> TaskOfJob(JobId job, TaskId task);
  // Adds delta to the running count of `job` (if it still exists).
  void CountRunning(JobId job, int delta);
  // Takes the task off its machine and starts a waiting period at now_us.
  void Unplace(Task& task, int64_t now_us, ChangeSet& changes);
  // Around every change to a machine's running set: Unindex before, Index
  // after (Index adds it only while it has a free slot).
  void Unindex(const Machine& machine);
  void Index(const Machine& machine);
  // Adds task `id` to tasks_ and to the index.
  Task& AddTask(TaskId id);
  // Task `id`, or null.
  Task* MutableTask(TaskId id);
  void SeeTime(int64_t now_us) {
    if (now_us > last_time_us_) last_time_us_ = now_us;
  }

  ValidationLimits limits_;
  std::map<JobId, Job> jobs_;
  std::set<JobId> gang_jobs_;
  std::map<TaskId, Task> tasks_;
  std::map<MachineId, Machine> machines_;
  // machines_ by id in O(1): every policy's sync and LocateInput look a
  // machine up per input replica. Map nodes are stable, so the pointers
  // stay valid until the machine is erased (and across a move).
  absl::flat_hash_map<MachineId, Machine*> machine_index_;
  // tasks_ by id in O(1), the same way: a burst's sync looks each task up
  // in every part of the policy (shapes, room pool, arcs).
  absl::flat_hash_map<TaskId, Task*> task_index_;
  std::set<OpenMachine> open_by_load_;
  size_t running_count_ = 0;
  uint64_t total_slots_ = 0;
  int64_t last_time_us_ = 0;
};

}  // namespace flowsched::cluster
