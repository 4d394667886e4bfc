#pragma once

// Reads the Alibaba GPU cluster trace 2023 ("openb", released with Weng et
// al., "Beware of Fragmentation", USENIX ATC 2023): a node list and a pod
// list, CSV with a header. Columns are found by name, so every pod list of
// the release loads (default, cpuXXX, gpushareXX, multigpuXX, gpuspecXX);
// extra columns are ignored.
//
// Nodes: sn, cpu_milli, memory_mib, gpu (device count), model (empty only
//   when gpu is 0).
// Pods: name, cpu_milli, memory_mib, num_gpu, gpu_milli (per device: 1-999
//   a fraction of one device, 1000 whole devices), gpu_spec (acceptable
//   models `A|B`; empty: any); optional qos, pod_phase, creation_time,
//   deletion_time, scheduled_time (seconds; empty: unknown).
//
// Every bad row is an error "file:line: why" (wrong column count, a
// negative or non-numeric number, a fraction of more than one device,
// gpu_milli above 1000, or 0 with devices, or devices with none asked, an
// empty model in a list, a duplicate name, too many devices); the read
// fails with all of them (InvalidArgument, the first kMaxReportedErrors
// listed). A missing required column or an empty file is InvalidArgument
// too; NotFound when the file cannot be opened. O(rows).

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/cluster/cluster_event.h"
#include "services/cluster/cluster_types.h"

namespace flowsched::sim {

inline constexpr size_t kMaxReportedErrors = 20;
// Devices per node or pod the reader accepts (the cluster state's default
// cap, ValidationLimits::max_devices_per_machine).
inline constexpr uint32_t kMaxOpenbDevices = 64;
// Slots of an openb machine: pods are bounded by CPU, memory and devices.
inline constexpr uint32_t kOpenbTaskSlots = 1'000;

struct OpenbNode {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  uint32_t gpus = 0;
  std::string model;
};

struct OpenbPod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  uint32_t num_gpu = 0;
  int64_t gpu_milli = 0;
  std::optional<std::vector<std::string>> gpu_spec;  // nullopt: any model
  std::string qos, pod_phase;
  // Seconds; -1 when the column is absent or the field empty.
  int64_t creation_time = -1, deletion_time = -1, scheduled_time = -1;
};

// `name` is used in error messages.
absl::StatusOr<std::vector<OpenbNode>> ReadOpenbNodes(std::istream& in,
                                                      const std::string& name);
absl::StatusOr<std::vector<OpenbPod>> ReadOpenbPods(std::istream& in,
                                                    const std::string& name);
absl::StatusOr<std::vector<OpenbNode>> ReadOpenbNodeFile(
    const std::string& path);
absl::StatusOr<std::vector<OpenbPod>> ReadOpenbPodFile(const std::string& path);

// The node as the cluster state takes it: CPU in millicores, memory in
// bytes (MiB x 2^20), kOpenbTaskSlots slots, `gpus` devices of `model` of
// 1000 milli each.
[[nodiscard]] cluster::MachineAdded ToMachineAdded(const OpenbNode& node,
                                                   MachineId id);
// The pod as a task: CPU, memory in bytes, and a fraction (gpu_milli of one
// device) or num_gpu whole devices, restricted to gpu_spec's models.
[[nodiscard]] cluster::TaskSpec ToTaskSpec(const OpenbPod& pod, TaskId id);

}  // namespace flowsched::sim
