#pragma once

// The FGD paper's replay of the openb trace (Weng et al., ATC 2023, as the
// authors' simulator runs it), on the project's cluster state and fit rule
// (cluster::FitTask, per-device milli).
//
// Protocol: every node is a machine (ToMachineAdded). The pods are sorted
// by name; then inflated: while the requested milli of all pods is below
// `inflate` x the cluster's device milli, a pod drawn uniformly (with
// replacement) from the trace is appended; while above, a random pod is
// removed; then shuffled. The RNG is std::mt19937_64 seeded with `seed`,
// so the sequence differs from the Go simulator's for the same seed (only
// distributions compare). Pods never finish. They arrive in batches of
// `batch` (1: the paper's one-at-a-time protocol); each batch is followed
// by one scheduling round. A baseline's pod that the round leaves unplaced
// is killed: it stays failed. A flow contender's stays waiting and is
// offered again in every later round.
//
// After each batch the replay records the arrived workload (requested
// milli of the pods submitted so far / capacity) and the allocated milli
// (/ capacity). At the first batch reaching `fragmentation_at` arrived it
// measures the cluster's fragmentation against the target workload (the
// trace's task shapes covering `coverage`; FGD schedules against the same).
// After the run every machine must be within capacity
// (cluster::WithinCapacity: CPU, memory, every device's milli) and the
// allocated milli must equal what the devices hold; otherwise Internal,
// never a number.

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/cluster/gpu_fragmentation.h"
#include "tools/sim/openb_reader.h"

namespace flowsched::sim {

struct GpuReplayOptions {
  uint64_t seed = 42;
  double inflate = 1.3;
  uint32_t batch = 1;
  double coverage = 0.95;              // of the target workload
  double fragmentation_at = 0.9;       // arrived share to measure it at
  std::string solver = "incremental";  // flow contenders
  std::ostream* progress = nullptr;    // a line every progress_every_s
  double progress_every_s = 5.0;
};

struct GpuReplayPoint {
  double arrived = 0;    // requested milli submitted / capacity
  double allocated = 0;  // milli held by placed pods / capacity
};

struct GpuReplayResult {
  std::string scheduler;
  uint64_t seed = 0;
  uint32_t batch = 1;
  uint64_t pods = 0;  // after inflation
  uint64_t placed = 0;
  uint64_t unplaced = 0;  // failed (baselines) or still waiting (flow)
  int64_t capacity_milli = 0;
  std::vector<GpuReplayPoint> curve;  // one point per batch
  // At the first batch with arrived >= fragmentation_at; nullopt if none.
  std::optional<cluster::ClusterFragmentation> fragmentation;
  double wall_s = 0;
  std::vector<double> decide_ms;  // per round: sync, solve, check, extract
  std::vector<double> solve_ms;   // per round: the solve (or Schedule) alone

  // 1 - allocated at the first point with arrived >= `arrived`; NaN if the
  // run never got there.
  [[nodiscard]] double UnallocatedAt(double arrived) const;
};

// The pods in arrival order (indices into `pods`, repeated for inflated
// draws) per the protocol above. Empty `pods`: empty.
[[nodiscard]] std::vector<size_t> ReplayOrder(const std::vector<OpenbPod>& pods,
                                              int64_t capacity_milli,
                                              uint64_t seed, double inflate);

// Requested device milli of a pod (num_gpu x gpu_milli).
[[nodiscard]] int64_t RequestedMilli(const OpenbPod& pod);

// One replay of `scheduler`: a baseline name (baselines::BaselineNames(),
// seeded with options.seed; "fgd" gets the target workload) or
// "flow:<policy>". InvalidArgument for an unknown scheduler or no device
// capacity; Internal when a round fails or the final state is over
// capacity.
absl::StatusOr<GpuReplayResult> RunGpuReplay(
    const std::vector<OpenbNode>& nodes, const std::vector<OpenbPod>& pods,
    const std::string& scheduler, const GpuReplayOptions& options);

}  // namespace flowsched::sim
