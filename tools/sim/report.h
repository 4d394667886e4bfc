#pragma once

// Output of a simulation: CSV files per scheduler, a summary (CSV and a
// table for stdout) over schedulers, and a gnuplot script for the
// placement-latency CDF and solver runtime over time (Firmament OSDI 2016
// figures 14 and 16), run if gnuplot is installed.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/sim/simulator.h"

namespace flowsched::sim {

struct Summary {
  std::string scheduler;
  uint64_t rounds = 0;  // after the warm-up
  uint64_t placed = 0;  // latency samples
  uint64_t unplaced = 0;
  Distribution latency_ms;
  Distribution round_ms;
  double mean_waiting = 0;
  double mean_slot_utilisation = 0;
  double mean_cpu_utilisation = 0;
  uint64_t preempted = 0, migrated = 0;
  double local = 0, rack = 0, cross = 0;  // fractions of input bytes
  int64_t cross_bytes = 0;
  // Cross-rack fraction of the input of the tasks running after the warm-up
  // (the time-0 population as placed): the figure the locality floor bounds.
  double warmup_cross = 0;
  double mean_fairness = 1;
  double sim_s = 0, wall_s = 0, busy_s = 0;
  double warmup_s = 0;  // placing the time-0 population (not simulated time)
  // Simulated seconds per wall second; >= 1 keeps up with the (sped-up)
  // workload in real time.
  [[nodiscard]] double sim_per_wall() const {
    return wall_s > 0 ? sim_s / wall_s : 0;
  }
};

Summary Summarise(const SimResult& result);

// A file-name-safe form of a scheduler name ("flow:quincy" -> "flow-quincy").
std::string FileStem(const std::string& scheduler);

// <stem>_latency.csv (one row per placed task), <stem>_latency_cdf.csv,
// <stem>_rounds.csv (one row per round).
absl::Status WriteSchedulerCsvs(const SimResult& result,
                                const std::string& dir);
// summary.csv: one row per scheduler.
absl::Status WriteSummaryCsv(const std::vector<Summary>& rows,
                             const std::string& dir);
// The summary as an aligned table.
std::string SummaryTable(const std::vector<Summary>& rows);

// Writes plots.gp into `dir` (latency_cdf.png, solver_runtime.png) and runs
// gnuplot on it when it is on PATH. Returns a line for the user: what was
// drawn, or how to draw it.
std::string WritePlots(const std::vector<SimResult>& results,
                       const std::string& dir);

// Runs gnuplot on `script` inside `dir`. Empty when it ran; otherwise a line
// for the user (gnuplot missing or failed, and how to run it by hand).
std::string RunGnuplot(const std::string& dir, const std::string& script);

}  // namespace flowsched::sim
