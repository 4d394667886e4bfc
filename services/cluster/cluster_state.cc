#include "services/cluster/cluster_state.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "services/cluster/resource_fit.h"
#include "services/common/status_macros.h"

namespace flowsched::cluster {
namespace {

template <typename... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <typename... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

}  // namespace

const Job* ClusterState::FindJob(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}
const Task* ClusterState::FindTask(TaskId id) const {
  auto it = task_index_.find(id);
  return it == task_index_.end() ? nullptr : it->second;
}

Task* ClusterState::MutableTask(TaskId id) {
  auto it = task_index_.find(id);
  return it == task_index_.end() ? nullptr : it->second;
}

Task& ClusterState::AddTask(TaskId id) {
  Task& task = tasks_[id];
  task_index_[id] = &task;
  return task;
}
const Machine* ClusterState::FindMachine(MachineId id) const {
  auto it = machine_index_.find(id);
  return it == machine_index_.end() ? nullptr : it->second;
}

absl::Status ClusterState::Apply(const ClusterEvent& event, int64_t now_us,
                                 ChangeSet& changes) {
  const int64_t time_us =
      event.event_time_us > 0 ? event.event_time_us : now_us;
  SeeTime(time_us);
  return std::visit(
      Overloaded{
          [&](const JobSubmitted& e) {
            return ApplyJobSubmitted(e, time_us, changes);
          },
          [&](const TaskSubmitted& e) {
            return ApplyTaskSubmitted(e, time_us, changes);
          },
          [&](const TaskFinished& e) {
            return ApplyTaskEnded(e.job, e.task, /*retry=*/false, time_us,
                                  changes);
          },
          [&](const TaskFailed& e) {
            return ApplyTaskEnded(e.job, e.task, /*retry=*/true, time_us,
                                  changes);
          },
          [&](const TaskKilled& e) {
            return ApplyTaskEnded(e.job, e.task, /*retry=*/false, time_us,
                                  changes);
          },
          [&](const TaskUpdated& e) { return ApplyTaskUpdated(e, changes); },
          [&](const MachineAdded& e) { return ApplyMachineAdded(e, changes); },
          [&](const MachineRemoved& e) {
            return ApplyMachineGone(e.machine, time_us, changes);
          },
          [&](const MachineFailed& e) {
            return ApplyMachineGone(e.machine, time_us, changes);
          },
          [&](const MachineUsage& e) { return ApplyMachineUsage(e, changes); },
          [&](const TaskUsage& e) { return ApplyTaskUsage(e); },
          [&](const Tick&) { return absl::OkStatus(); },
          // The graph manager acts on it; the cluster is unchanged.
          [&](const SetPolicy&) { return absl::OkStatus(); },
      },
      event.body);
}

absl::Status ClusterState::ApplyJobSubmitted(const JobSubmitted& e,
                                             int64_t time_us,
                                             ChangeSet& changes) {
  if (jobs_.contains(e.job)) {
    return absl::AlreadyExistsError(
        absl::StrCat("job ", e.job.value(), " already exists"));
  }
  if (e.tasks.size() > limits_.max_tasks_per_job) {
    return absl::InvalidArgumentError(
        absl::StrCat("job ", e.job.value(), " has ", e.tasks.size(),
                     " tasks; the limit is ", limits_.max_tasks_per_job));
  }
  // Validate every task before adding anything.
  for (const TaskSpec& spec : e.tasks) {
    if (task_index_.contains(spec.id)) {
      return absl::AlreadyExistsError(absl::StrCat("task ", spec.id.value(),
                                                   " of job ", e.job.value(),
                                                   " already exists"));
    }
  }
  Job& job = jobs_[e.job];
  job.id = e.job;
  job.name = e.name;
  job.priority = e.priority;
  job.different_machines = e.different_machines;
  job.min_members = e.min_members;
  if (job.gang()) gang_jobs_.insert(e.job);
  for (const TaskSpec& spec : e.tasks) {
    Task& task = AddTask(spec.id);
    task.spec = spec;
    task.job = e.job;
    task.submit_time_us = time_us;
    task.wait_start_us = time_us;
    job.tasks.insert(spec.id);
    changes.tasks.insert(spec.id);
  }
  changes.jobs.insert(e.job);
  return absl::OkStatus();
}

absl::Status ClusterState::ApplyTaskSubmitted(const TaskSubmitted& e,
                                              int64_t time_us,
                                              ChangeSet& changes) {
  auto job_it = jobs_.find(e.job);
  if (job_it == jobs_.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "task ", e.task.id.value(), " names unknown job ", e.job.value()));
  }
  if (task_index_.contains(e.task.id)) {
    return absl::AlreadyExistsError(
        absl::StrCat("task ", e.task.id.value(), " already exists"));
  }
  if (job_it->second.tasks.size() >= limits_.max_tasks_per_job) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job ", e.job.value(), " already has ", job_it->second.tasks.size(),
        " tasks; the limit is ", limits_.max_tasks_per_job));
  }
  Task& task = AddTask(e.task.id);
  task.spec = e.task;
  task.job = e.job;
  task.submit_time_us = time_us;
  task.wait_start_us = time_us;
  job_it->second.tasks.insert(e.task.id);
  changes.tasks.insert(e.task.id);
  changes.jobs.insert(e.job);
  return absl::OkStatus();
}

absl::StatusOr<Task*> ClusterState::TaskOfJob(JobId job, TaskId task) {
  Task* found = MutableTask(task);
  if (found == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("unknown task ", task.value(), " of job ", job.value()));
  }
  if (found->job != job) {
    return absl::FailedPreconditionError(
        absl::StrCat("task ", task.value(), " belongs to job ",
                     found->job.value(), ", not ", job.value()));
  }
  return found;
}

void ClusterState::CountRunning(JobId job, int delta) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  it->second.running =
      static_cast<uint32_t>(static_cast<int64_t>(it->second.running) + delta);
}

void ClusterState::Unindex(const Machine& machine) {
  open_by_load_.erase(
      {static_cast<uint32_t>(machine.running.size()), machine.id, nullptr});
}

void ClusterState::Index(const Machine& machine) {
  if (machine.free_slots() == 0) return;
  open_by_load_.insert(
      {static_cast<uint32_t>(machine.running.size()), machine.id, &machine});
}

void ClusterState::Unplace(Task& task, int64_t now_us, ChangeSet& changes) {
  if (!task.running()) return;
  auto machine_it = machines_.find(task.machine);
  if (machine_it != machines_.end()) {
    Unindex(machine_it->second);
    machine_it->second.running.erase(task.spec.id);
    Index(machine_it->second);
    UnbookTask(machine_it->second, task.spec, task.devices);
    changes.machines.insert(task.machine);
  }
  task.devices.clear();
  task.run_us_total += std::max<int64_t>(0, now_us - task.start_time_us);
  task.wait_start_us = now_us;
  task.machine = MachineId(0);
  task.start_time_us = 0;
  --running_count_;
  CountRunning(task.job, -1);
  changes.tasks.insert(task.spec.id);
}

absl::Status ClusterState::ApplyTaskEnded(JobId job, TaskId task_id, bool retry,
                                          int64_t time_us, ChangeSet& changes) {
  FLOWSCHED_ASSIGN_OR_RETURN(Task * task, TaskOfJob(job, task_id));
  Unplace(*task, time_us, changes);
  changes.tasks.insert(task_id);
  if (retry) return absl::OkStatus();  // waits to be placed again
  task_index_.erase(task_id);
  tasks_.erase(task_id);
  auto job_it = jobs_.find(job);
  job_it->second.tasks.erase(task_id);
  changes.jobs.insert(job);
  // A job lives as long as it has tasks; this keeps state bounded for
  // workloads of many short jobs.
  if (job_it->second.tasks.empty()) {
    gang_jobs_.erase(job);
    jobs_.erase(job_it);
  }
  return absl::OkStatus();
}

absl::Status ClusterState::ApplyTaskUpdated(const TaskUpdated& e,
                                            ChangeSet& changes) {
  FLOWSCHED_ASSIGN_OR_RETURN(Task * task, TaskOfJob(e.job, e.task));
  if (task->running()) {
    // The allocation follows the request of a running task; an update may
    // over-commit the machine (it reports what is), Place may not. The
    // accelerator ask and the devices held stay (events.proto).
    auto machine_it = machines_.find(task->machine);
    if (machine_it != machines_.end()) {
      AddResources(machine_it->second.allocated, task->spec.request, -1);
      AddResources(machine_it->second.allocated, e.request, 1);
      changes.machines.insert(task->machine);
    }
  }
  task->spec.request = e.request;
  task->spec.priority = e.priority;
  changes.tasks.insert(e.task);
  return absl::OkStatus();
}

absl::Status ClusterState::ApplyMachineAdded(const MachineAdded& e,
                                             ChangeSet& changes) {
  if (machines_.contains(e.machine)) {
    return absl::AlreadyExistsError(
        absl::StrCat("machine ", e.machine.value(), " already exists"));
  }
  Machine& machine = machines_[e.machine];
  machine_index_[e.machine] = &machine;
  machine.id = e.machine;
  machine.rack = e.rack;
  machine.capacity = e.capacity;
  machine.task_slots = e.task_slots;
  machine.labels = e.labels;
  machine.devices = ExpandAccelerators(e.accelerators);
  Index(machine);
  total_slots_ += e.task_slots;
  changes.machines.insert(e.machine);
  return absl::OkStatus();
}

absl::Status ClusterState::ApplyMachineGone(MachineId id, int64_t time_us,
                                            ChangeSet& changes) {
  auto it = machines_.find(id);
  if (it == machines_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("unknown machine ", id.value()));
  }
  // Its tasks wait to be placed elsewhere.
  for (TaskId task_id : it->second.running) {
    Task& task = *task_index_.at(task_id);
    task.run_us_total += std::max<int64_t>(0, time_us - task.start_time_us);
    task.wait_start_us = time_us;
    task.machine = MachineId(0);
    task.start_time_us = 0;
    task.devices.clear();  // the machine and its devices go
    --running_count_;
    CountRunning(task.job, -1);
    changes.tasks.insert(task_id);
  }
  total_slots_ -= it->second.task_slots;
  Unindex(it->second);
  machine_index_.erase(id);
  machines_.erase(it);
  changes.machines.insert(id);
  return absl::OkStatus();
}

absl::Status ClusterState::ApplyMachineUsage(const MachineUsage& e,
                                             ChangeSet& changes) {
  auto it = machines_.find(e.machine);
  if (it == machines_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("usage for unknown machine ", e.machine.value()));
  }
  it->second.used = e.used;
  changes.machines.insert(e.machine);
  return absl::OkStatus();
}

absl::Status ClusterState::ApplyTaskUsage(const TaskUsage& e) {
  FLOWSCHED_ASSIGN_OR_RETURN(Task * task, TaskOfJob(e.job, e.task));
  task->used = e.used;
  return absl::OkStatus();
}

absl::Status ClusterState::Place(TaskId task_id, MachineId machine_id,
                                 int64_t now_us, ChangeSet& changes,
                                 std::span<const DeviceShare> devices) {
  SeeTime(now_us);
  Task* found = MutableTask(task_id);
  if (found == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("place: task ", task_id.value(), " is gone"));
  }
  Task& task = *found;
  if (task.running()) {
    return absl::FailedPreconditionError(
        absl::StrCat("place: task ", task_id.value(), " already runs on ",
                     task.machine.value()));
  }
  auto machine_it = machines_.find(machine_id);
  if (machine_it == machines_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("place: machine ", machine_id.value(), " is gone"));
  }
  Machine& machine = machine_it->second;
  Fit fit = FitTaskOnDevices(machine, task.spec, devices);
  if (!fit.fits()) {
    if (machine.free_slots() == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "place: machine ", machine_id.value(), " has no free slot"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("place: task ", task_id.value(),
                     " does not fit the free resources of machine ",
                     machine_id.value(), " (", fit.reason, ")"));
  }
  Unindex(machine);
  machine.running.insert(task_id);
  Index(machine);
  BookTask(machine, task.spec, fit.devices);
  task.devices = std::move(fit.devices);
  task.wait_us_total += std::max<int64_t>(0, now_us - task.wait_start_us);
  task.machine = machine_id;
  task.start_time_us = now_us;
  ++task.placements;
  ++running_count_;
  CountRunning(task.job, 1);
  changes.tasks.insert(task_id);
  changes.machines.insert(machine_id);
  return absl::OkStatus();
}

absl::Status ClusterState::Preempt(TaskId task_id, int64_t now_us,
                                   ChangeSet& changes) {
  SeeTime(now_us);
  Task* task = MutableTask(task_id);
  if (task == nullptr || !task->running()) {
    return absl::FailedPreconditionError(
        absl::StrCat("preempt: task ", task_id.value(), " is not running"));
  }
  Unplace(*task, now_us, changes);
  return absl::OkStatus();
}

absl::Status ClusterState::Migrate(TaskId task_id, MachineId from, MachineId to,
                                   int64_t now_us, ChangeSet& changes) {
  SeeTime(now_us);
  Task* task = MutableTask(task_id);
  if (task == nullptr || task->machine != from) {
    return absl::FailedPreconditionError(
        absl::StrCat("migrate: task ", task_id.value(), " no longer runs on ",
                     from.value()));
  }
  auto to_it = machines_.find(to);
  if (to_it == machines_.end() || from == to) {
    return absl::FailedPreconditionError(absl::StrCat(
        "migrate: machine ", to.value(), " is gone or is where it runs (task ",
        task_id.value(), ")"));
  }
  // `to` is another machine, so the task's own use does not count there.
  if (Fit fit = FitTask(to_it->second, task->spec); !fit.fits()) {
    return absl::FailedPreconditionError(
        absl::StrCat("migrate: task ", task_id.value(),
                     " does not fit the free resources of machine ", to.value(),
                     " (", fit.reason, ")"));
  }
  Unplace(*task, now_us, changes);
  return Place(task_id, to, now_us, changes);
}

absl::Status ClusterState::RestoreJob(Job job) {
  if (jobs_.contains(job.id)) {
    return absl::DataLossError(
        absl::StrCat("stored job ", job.id.value(), " appears twice"));
  }
  job.tasks.clear();
  job.running = 0;  // rebuilt by RestoreTask
  if (job.gang()) gang_jobs_.insert(job.id);
  jobs_.emplace(job.id, std::move(job));
  return absl::OkStatus();
}

absl::Status ClusterState::RestoreMachine(Machine machine) {
  if (machines_.contains(machine.id)) {
    return absl::DataLossError(
        absl::StrCat("stored machine ", machine.id.value(), " appears twice"));
  }
  machine.running.clear();
  machine.allocated = {};  // RestoreTask adds its tasks back
  for (Device& device : machine.devices) {
    device.used_milli = 0;
    device.used_memory_bytes = 0;
    device.tasks.clear();
  }
  total_slots_ += machine.task_slots;
  const auto [it, inserted] = machines_.emplace(machine.id, std::move(machine));
  machine_index_[it->first] = &it->second;
  Index(it->second);
  return absl::OkStatus();
}

namespace {

// A stored device list must be one Place could have made: one share per
// device asked for, ascending indices of the machine's devices, and room
// left on each (device use never over-commits, not even after updates).
absl::Status CheckStoredDevices(const Task& task, const Machine& machine) {
  const auto bad = [&](absl::string_view why) {
    return absl::DataLossError(
        absl::StrCat("stored task ", task.spec.id.value(), " on machine ",
                     machine.id.value(), " holds devices that ", why));
  };
  if (task.devices.size() != task.spec.accelerator.device_count()) {
    return bad("do not match its accelerator ask");
  }
  for (size_t i = 0; i < task.devices.size(); ++i) {
    const DeviceShare& share = task.devices[i];
    if (share.index >= machine.devices.size() ||
        (i > 0 && share.index <= task.devices[i - 1].index)) {
      return bad("are unknown or out of order");
    }
    const Device& device = machine.devices[share.index];
    if (!task.spec.accelerator.AcceptsModel(device.model)) {
      return bad("are of a model it does not accept");
    }
    // What FitTask gives: a whole device alone, or the fraction asked.
    const bool whole = task.spec.accelerator.milli == 0;
    if (share.milli !=
            (whole ? device.capacity_milli : task.spec.accelerator.milli) ||
        (whole && !device.tasks.empty()) || share.milli > device.free_milli()) {
      return bad("are over-committed or not what it asks");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ClusterState::RestoreTask(Task task) {
  const TaskId id = task.spec.id;
  auto job_it = jobs_.find(task.job);
  // The store yields tasks in ascending id order, so each one goes at the
  // end of every ordered container it joins: inserting with that hint costs
  // one comparison instead of a walk down a cold tree (the restart of a
  // graph manager with 150,000 tasks spent a fifth of its time here). An
  // id out of order still lands in the right place, just slower.
  const auto task_hint = tasks_.lower_bound(id);
  if (job_it == jobs_.end() ||
      (task_hint != tasks_.end() && task_hint->first == id)) {
    return absl::DataLossError(absl::StrCat(
        "stored task ", id.value(), " is a duplicate or names unknown job ",
        task.job.value()));
  }
  if (!task.running() && !task.devices.empty()) {
    return absl::DataLossError(
        absl::StrCat("stored task ", id.value(), " waits but holds devices"));
  }
  if (task.running()) {
    auto machine_it = machines_.find(task.machine);
    if (machine_it == machines_.end() || machine_it->second.free_slots() == 0) {
      return absl::DataLossError(
          absl::StrCat("stored task ", id.value(), " runs on machine ",
                       task.machine.value(), " that is unknown or full"));
    }
    FLOWSCHED_RETURN_IF_ERROR(CheckStoredDevices(task, machine_it->second));
    std::set<TaskId>& running = machine_it->second.running;
    Unindex(machine_it->second);
    running.emplace_hint(running.end(), id);
    Index(machine_it->second);
    BookTask(machine_it->second, task.spec, task.devices);
    ++running_count_;
    ++job_it->second.running;
  }
  std::set<TaskId>& job_tasks = job_it->second.tasks;
  job_tasks.emplace_hint(job_tasks.end(), id);
  const auto added = tasks_.emplace_hint(task_hint, id, std::move(task));
  task_index_[id] = &added->second;
  return absl::OkStatus();
}

}  // namespace flowsched::cluster
