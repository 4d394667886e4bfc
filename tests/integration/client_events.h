#pragma once

// Events the client tests publish with EventPublisher: a machine of 4 slots,
// 8 cores and 16 GiB in rack r1, and a job of tasks asking 1 core and 1 GiB.

#include <cstdint>

#include "flowsched/v1/events.pb.h"

namespace flowsched::testing {

inline v1::ClusterEvent MachineAdded(uint64_t machine_id) {
  v1::ClusterEvent event;
  auto* added = event.mutable_machine_added();
  added->set_machine_id(machine_id);
  added->set_rack("r1");
  added->set_task_slots(4);
  added->mutable_capacity()->set_cpu_millis(8000);
  added->mutable_capacity()->set_memory_bytes(int64_t{16} << 30);
  return event;
}

// Tasks first_task_id .. first_task_id + tasks - 1.
inline v1::ClusterEvent JobSubmitted(uint64_t job_id, uint64_t first_task_id,
                                     uint64_t tasks) {
  v1::ClusterEvent event;
  event.mutable_job_submitted()->set_job_id(job_id);
  for (uint64_t t = first_task_id; t < first_task_id + tasks; ++t) {
    auto* task = event.mutable_job_submitted()->add_tasks();
    task->set_task_id(t);
    task->mutable_request()->set_cpu_millis(1000);
    task->mutable_request()->set_memory_bytes(int64_t{1} << 30);
  }
  return event;
}

}  // namespace flowsched::testing
