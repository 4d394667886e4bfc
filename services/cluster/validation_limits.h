#pragma once

// Caps on what one event may ask for. They keep a hostile or buggy producer
// (a job of a billion tasks, a machine with 2^40 slots) from exhausting
// memory or overflowing arc costs. Configurable; these are the defaults.

#include <cstdint>

namespace flowsched::cluster {

struct ValidationLimits {
  uint64_t max_tasks_per_job = 100'000;
  uint32_t max_task_slots = 1'000;
  int64_t max_cpu_millis = int64_t{1} << 32;    // ~4M cores
  int64_t max_memory_bytes = int64_t{1} << 50;  // 1 PiB
  int64_t max_network_bytes_per_sec = int64_t{1} << 40;
  int64_t max_input_bytes = int64_t{1} << 50;
  uint32_t max_locality_entries = 64;
  uint32_t max_labels = 64;
  uint32_t max_string_bytes = 256;
  // Named scalar resources per Resources message, and the amount of each
  // (sums of a machine's tasks stay far from overflow).
  uint32_t max_named_resources = 32;
  int64_t max_scalar_amount = int64_t{1} << 50;
  // Accelerator devices per machine (a task cannot ask for more), and
  // models per task ask.
  uint32_t max_devices_per_machine = 64;
  uint32_t max_accelerator_models = 16;
};

}  // namespace flowsched::cluster
