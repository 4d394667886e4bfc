#include "tools/sim/openb_workload.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace flowsched::sim {

absl::StatusOr<Workload> BuildOpenbWorkload(const std::vector<OpenbNode>& nodes,
                                            const std::vector<OpenbPod>& pods,
                                            uint64_t machines_per_rack,
                                            bool pods_stay,
                                            OpenbWorkloadStats& stats) {
  stats = {};
  if (nodes.empty()) return absl::InvalidArgumentError("openb: no nodes");
  if (machines_per_rack == 0) {
    return absl::InvalidArgumentError("openb: machines per rack must be > 0");
  }
  int64_t max_cpu = 0;
  int64_t max_memory = 0;
  for (const OpenbNode& node : nodes) {
    if (node.cpu_milli <= 0 || node.memory_mib <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "openb: node ", node.name, " reports no CPU or no memory"));
    }
    max_cpu = std::max(max_cpu, node.cpu_milli);
    max_memory = std::max(max_memory, node.memory_mib);
  }
  Workload workload;
  workload.machines.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    workload.machines.push_back(
        {.id = i + 1,
         .rack = absl::StrCat("r", i / machines_per_rack),
         .cpu = static_cast<double>(nodes[i].cpu_milli) /
                static_cast<double>(max_cpu),
         .memory = static_cast<double>(nodes[i].memory_mib) /
                   static_cast<double>(max_memory)});
  }
  constexpr int64_t kMicros = 1'000'000;
  for (size_t i = 0; i < pods.size(); ++i) {
    const OpenbPod& pod = pods[i];
    ++stats.pods;
    if (pod.scheduled_time < 0) {
      ++stats.never_scheduled;
      continue;
    }
    if (pod.creation_time < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "openb: pod ", pod.name, " was scheduled but has no creation time"));
    }
    const int64_t created = pod.creation_time;
    if (pod.scheduled_time < created ||
        (pod.deletion_time >= 0 && pod.deletion_time < pod.scheduled_time) ||
        std::max(pod.scheduled_time, pod.deletion_time) > kMaxOpenbSeconds) {
      return absl::InvalidArgumentError(absl::StrCat(
          "openb: pod ", pod.name, " has times out of order or past ",
          kMaxOpenbSeconds, " s (created ", pod.creation_time, ", scheduled ",
          pod.scheduled_time, ", deleted ", pod.deletion_time, ")"));
    }
    stats.gpu_asks_left_out += pod.num_gpu > 0 || pod.gpu_milli > 0;
    workload.tasks.push_back(
        {.task_id = i + 1,
         .job_id = i + 1,
         .submit_us = created * kMicros,
         .duration_us =
             pods_stay || pod.deletion_time < 0
                 ? kForever
                 : (pod.deletion_time - pod.scheduled_time) * kMicros,
         .cpu =
             static_cast<double>(pod.cpu_milli) / static_cast<double>(max_cpu),
         .memory = static_cast<double>(pod.memory_mib) /
                   static_cast<double>(max_memory)});
  }
  if (workload.tasks.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("openb: none of the ", stats.pods,
                     " pods was ever scheduled (is scheduled_time there?)"));
  }
  std::sort(workload.tasks.begin(), workload.tasks.end(),
            [](const SimTask& a, const SimTask& b) {
              return std::tie(a.submit_us, a.task_id) <
                     std::tie(b.submit_us, b.task_id);
            });
  return workload;
}

}  // namespace flowsched::sim
