#include "tools/workload/workload_generator.h"

#include <random>
#include <string>

#include "absl/strings/str_cat.h"

namespace flowsched::tools {

std::vector<v1::ClusterEvent> GenerateMachines(const WorkloadSpec& spec) {
  std::vector<v1::ClusterEvent> events;
  events.reserve(spec.machines);
  for (uint64_t i = 0; i < spec.machines; ++i) {
    const uint64_t id = spec.first_machine_id + i;
    v1::ClusterEvent event;
    event.set_event_id(absl::StrCat("gen-machine-", id));
    event.set_source("flowsched-generate");
    if (spec.event_time_us > 0) event.set_event_time_us(spec.event_time_us);
    v1::MachineAdded* m = event.mutable_machine_added();
    m->set_machine_id(id);
    m->set_rack(absl::StrCat("rack-", spec.racks == 0 ? 0 : i % spec.racks));
    m->set_task_slots(spec.slots_per_machine);
    m->mutable_capacity()->set_cpu_millis(16'000);
    m->mutable_capacity()->set_memory_bytes(int64_t{64} << 30);
    m->mutable_capacity()->set_network_bytes_per_sec(int64_t{1250} << 20);
    events.push_back(std::move(event));
  }
  return events;
}

std::vector<v1::ClusterEvent> GenerateJobs(const WorkloadSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  std::uniform_int_distribution<int64_t> cpu(250, 4000);
  std::uniform_int_distribution<int64_t> memory_gib(1, 8);
  std::vector<v1::ClusterEvent> events;
  events.reserve(spec.jobs);
  uint64_t task_id = spec.first_task_id;
  for (uint64_t j = 0; j < spec.jobs; ++j) {
    const uint64_t job_id = spec.first_job_id + j;
    v1::ClusterEvent event;
    event.set_event_id(absl::StrCat("gen-job-", job_id));
    event.set_source("flowsched-generate");
    if (spec.event_time_us > 0) event.set_event_time_us(spec.event_time_us);
    v1::JobSubmitted* job = event.mutable_job_submitted();
    job->set_job_id(job_id);
    job->set_name(absl::StrCat("job-", job_id));
    job->set_task_count(spec.tasks_per_job);
    for (uint64_t t = 0; t < spec.tasks_per_job; ++t) {
      v1::TaskSpec* task = job->add_tasks();
      task->set_task_id(task_id++);
      task->mutable_request()->set_cpu_millis(cpu(rng));
      task->mutable_request()->set_memory_bytes(memory_gib(rng) << 30);
      if (spec.locality && spec.machines > 0) {
        const int64_t input = memory_gib(rng) << 30;
        task->set_input_bytes(input);
        std::uniform_int_distribution<uint64_t> machine(0, spec.machines - 1);
        for (int block = 0; block < 3; ++block) {
          v1::DataLocality* entry = task->add_input();
          entry->set_machine_id(spec.first_machine_id + machine(rng));
          entry->set_bytes(input / 3);
        }
      }
    }
    events.push_back(std::move(event));
  }
  return events;
}

std::string EventKey(const v1::ClusterEvent& event) {
  switch (event.event_case()) {
    case v1::ClusterEvent::kJobSubmitted:
      return absl::StrCat("job/", event.job_submitted().job_id());
    case v1::ClusterEvent::kTaskSubmitted:
      return absl::StrCat("job/", event.task_submitted().job_id());
    case v1::ClusterEvent::kTaskFinished:
      return absl::StrCat("job/", event.task_finished().job_id());
    case v1::ClusterEvent::kTaskFailed:
      return absl::StrCat("job/", event.task_failed().job_id());
    case v1::ClusterEvent::kTaskKilled:
      return absl::StrCat("job/", event.task_killed().job_id());
    case v1::ClusterEvent::kTaskUpdated:
      return absl::StrCat("job/", event.task_updated().job_id());
    case v1::ClusterEvent::kTaskUsage:
      return absl::StrCat("job/", event.task_usage().job_id());
    case v1::ClusterEvent::kMachineAdded:
      return absl::StrCat("machine/", event.machine_added().machine_id());
    case v1::ClusterEvent::kMachineRemoved:
      return absl::StrCat("machine/", event.machine_removed().machine_id());
    case v1::ClusterEvent::kMachineFailed:
      return absl::StrCat("machine/", event.machine_failed().machine_id());
    case v1::ClusterEvent::kMachineUsage:
      return absl::StrCat("machine/", event.machine_usage().machine_id());
    case v1::ClusterEvent::kTick:
      return "tick";
    case v1::ClusterEvent::kSetPolicy:
      return "admin";
    case v1::ClusterEvent::EVENT_NOT_SET:
      break;
  }
  return "unknown";
}

}  // namespace flowsched::tools
