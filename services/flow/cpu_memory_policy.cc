#include "services/flow/cpu_memory_policy.h"

#include "services/flow/request_shapes.h"

namespace flowsched::flow {

ProfileParams CpuMemoryProfile(const CpuMemoryParams& params) {
  return {.spread = params.util_scale,
          .pack = 0,
          .preferred_labels = params.preferred_discount,
          .model_affinity = 0,
          .locality = 0,
          .unscheduled_cost = params.unscheduled_cost,
          .priority_step = 0,
          .max_priority = 0,
          .preemption_cost = params.preemption_cost,
          .max_tasks_per_machine = 0,
          .shape_machines_per_task = 0,
          .min_shape_machines = 16,
          .gang_first_after_s = params.gang_first_after_s};
}

std::string CpuMemoryPolicy::ClassText(const cluster::Task& task,
                                       const cluster::ClusterState& state) {
  return ShapeKey(task, state);
}

}  // namespace flowsched::flow
