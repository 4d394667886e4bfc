#pragma once

// Output of `flowsched gpu-replay`: per scheduler and batch size, the FGD
// paper's figures averaged over seeds (mean and sample standard deviation),
// as a table and CSVs, and a gnuplot script drawing unallocated GPU against
// arrived workload (the paper's figure 9a).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/sim/gpu_replay.h"

namespace flowsched::sim {

// Mean and sample standard deviation (n - 1) of the defined (non-NaN)
// values; NaN where there are too few (none; one for the deviation).
struct MeanSd {
  double mean = 0, sd = 0;
  uint32_t n = 0;
};
[[nodiscard]] MeanSd MeanAndSd(const std::vector<double>& values);

struct GpuReplaySummary {
  std::string scheduler;
  uint32_t batch = 1;
  uint32_t runs = 0;
  // Percentages of the cluster's device milli.
  MeanSd unallocated_at_100, unallocated_at_130;
  MeanSd fragmentation_of_idle_at_90;      // % of idle device milli
  MeanSd fragmentation_of_capacity_at_90;  // % of capacity
  MeanSd pods, unplaced;
  MeanSd wall_s;
  double decide_p50_ms = 0, decide_p99_ms = 0;  // over every run's rounds
  double solve_p50_ms = 0;                      // the solve alone
};

// One summary per (scheduler, batch), in first-seen order.
[[nodiscard]] std::vector<GpuReplaySummary> SummariseGpuReplays(
    const std::vector<GpuReplayResult>& results);

[[nodiscard]] std::string GpuReplayTable(
    const std::vector<GpuReplaySummary>& rows);

// In `dir`: summary.csv; per run <stem>_b<batch>_seed<seed>.csv (arrived %,
// unallocated %, a row per 0.1% of arrived and the last); per scheduler
// and batch mean_<stem>_b<batch>.csv (mean over seeds on arrived 0-130% in
// 1% steps); plot_gpu_replay.gp drawing the means (unallocated_gpu.png).
// Internal when a file cannot be written.
absl::Status WriteGpuReplayCsvs(const std::vector<GpuReplayResult>& results,
                                const std::vector<GpuReplaySummary>& rows,
                                const std::string& dir);

}  // namespace flowsched::sim
