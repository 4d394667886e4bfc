#pragma once

// GPU fragmentation as the FGD paper measures it (Weng et al., USENIX ATC
// 2023, section 3; the authors' simulator, pkg/utils/frag.go): the idle
// accelerator milli of a machine that the expected tasks cannot use.
//
// The expected tasks are a TargetWorkload: the most popular task shapes
// with their popularity p_m. For machine n and shape m, F_n(m) is
//   - all idle milli of n when m cannot run on n at all (no free slot, too
//     little free CPU or memory, too few free acceptable devices) or asks
//     for no device;
//   - otherwise the idle milli of the devices m cannot use: devices of a
//     model m does not accept, and devices whose free milli is below m's
//     per-device ask (a fraction's milli; a whole device's capacity).
// NodeFragmentation = sum_m p_m F_n(m) (milli); a cluster's is the sum over
// machines, and its rate the share of the idle milli that is fragmented.
// Device memory and named scalars are not part of the measure (the trace
// reports neither), nor devices past the 64th of a machine (the default
// ValidationLimits::max_devices_per_machine). The FGD scheduler places where
// the delta is least.
//
// Thread-safety: pure functions; TargetWorkload is immutable once built.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "services/cluster/cluster_types.h"

namespace flowsched::cluster {

// One task shape of a TargetWorkload and its popularity.
struct TaskShape {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
  AcceleratorRequest accelerator;  // memory_bytes ignored
  double popularity = 0;           // p_m; a workload's shapes sum to 1
  bool operator==(const TaskShape&) const = default;
};

// The task shapes fragmentation is measured against.
class TargetWorkload {
 public:
  TargetWorkload() = default;
  // Distinct shapes of `tasks` (CPU, memory, whole devices, milli, models),
  // most popular first (ties: smaller shape first), keeping the fewest that
  // cover at least `coverage` (0..1] of the tasks; popularity is
  // renormalised over the kept shapes, as the authors' simulator does
  // (podPopularityThreshold 95). Empty `tasks`: an empty workload, under
  // which every machine's fragmentation is 0. O(T log T).
  [[nodiscard]] static TargetWorkload Build(std::span<const TaskSpec> tasks,
                                            double coverage = 0.95);
  // Shapes as given (popularities used as they are).
  [[nodiscard]] static TargetWorkload FromShapes(std::vector<TaskShape> shapes);

  [[nodiscard]] const std::vector<TaskShape>& shapes() const { return shapes_; }

 private:
  std::vector<TaskShape> shapes_;
};

// Sum of the free milli of `machine`'s devices.
[[nodiscard]] int64_t IdleDeviceMilli(const Machine& machine);

// sum_m p_m F_n(m), in milli. O(shapes x devices).
[[nodiscard]] double NodeFragmentation(const Machine& machine,
                                       const TargetWorkload& workload);

// How NodeFragmentation(machine) changes if `task` is booked on `machine`
// with `devices` (as cluster::BookTask would; its CPU and memory count
// too). Negative: the placement reduces fragmentation. Does not check that
// the task fits. REQUIRES: every share's index is a device of the machine.
// O(shapes x devices), no allocation.
[[nodiscard]] double FragmentationDelta(const Machine& machine,
                                        const TargetWorkload& workload,
                                        const TaskSpec& task,
                                        std::span<const DeviceShare> devices);

struct ClusterFragmentation {
  double fragmented_milli = 0;  // sum over machines of NodeFragmentation
  int64_t idle_milli = 0;       // free milli of every device
  int64_t capacity_milli = 0;   // capacity of every device
  // Fragmented share of the idle milli (0 when nothing is idle) and of the
  // capacity (0 without devices).
  [[nodiscard]] double rate_of_idle() const {
    return idle_milli == 0 ? 0
                           : fragmented_milli / static_cast<double>(idle_milli);
  }
  [[nodiscard]] double rate_of_capacity() const {
    return capacity_milli == 0
               ? 0
               : fragmented_milli / static_cast<double>(capacity_milli);
  }
};

// The cluster's fragmentation: O(machines x shapes x devices).
[[nodiscard]] ClusterFragmentation MeasureFragmentation(
    const std::map<MachineId, Machine>& machines,
    const TargetWorkload& workload);

}  // namespace flowsched::cluster
