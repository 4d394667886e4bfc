#pragma once

// Machines and shapes for the cost terms' unit tests (tests only).

#include <cstdint>
#include <string>
#include <vector>

#include "services/cluster/cluster_types.h"
#include "services/common/byte_units.h"
#include "services/flow/request_shapes.h"

namespace flowsched::flow::testing {

// A machine of `cpu` millicores and `mem_gib` GiB with `cpu_used` and
// `mem_used_gib` allocated.
inline cluster::Machine MachineWith(int64_t cpu, int64_t mem_gib,
                                    int64_t cpu_used = 0,
                                    int64_t mem_used_gib = 0) {
  cluster::Machine machine;
  machine.capacity = {cpu, mem_gib * kGiB, 0};
  machine.allocated = {cpu_used, mem_used_gib * kGiB, 0};
  machine.task_slots = 100;
  return machine;
}

inline RequestShape ShapeAsking(int64_t cpu, int64_t mem_gib) {
  RequestShape shape;
  shape.ask.request = {cpu, mem_gib * kGiB, 0};
  shape.waiting = 1;
  return shape;
}

}  // namespace flowsched::flow::testing
