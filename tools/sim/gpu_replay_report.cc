#include "tools/sim/gpu_replay_report.h"

#include <cmath>
#include <fstream>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "fmt/format.h"
#include "services/common/percentile.h"
#include "tools/sim/report.h"

namespace flowsched::sim {
namespace {

constexpr double kPercent = 100.0;

std::string RunStem(const GpuReplayResult& run) {
  return absl::StrCat(FileStem(run.scheduler), "_b", run.batch, "_seed",
                      run.seed);
}

std::string MeanStem(const GpuReplaySummary& row) {
  return absl::StrCat("mean_", FileStem(row.scheduler), "_b", row.batch);
}

std::string Cell(const MeanSd& value, int precision) {
  if (value.n == 0 || std::isnan(value.mean)) return "n/a";
  if (value.n == 1 || std::isnan(value.sd)) {
    return fmt::format("{:.{}f}", value.mean, precision);
  }
  return fmt::format("{:.{}f} ± {:.{}f}", value.mean, precision, value.sd,
                     precision);
}

// The gnuplot script: one line per mean curve, the paper's axes.
std::string PlotScript(const std::vector<GpuReplaySummary>& rows) {
  std::string script =
      "# Unallocated GPU vs arrived workload (FGD paper, figure 9a).\n"
      "# Written by flowsched gpu-replay; run: gnuplot plot_gpu_replay.gp\n"
      "set datafile separator ','\n"
      "set terminal pngcairo size 900,600\n"
      "set output 'unallocated_gpu.png'\n"
      "set xlabel 'Arrived workload (% of GPU capacity)'\n"
      "set ylabel 'Unallocated GPU (%)'\n"
      "set xrange [0:130]\n"
      "set key top left\n"
      "set grid\n"
      "plot ";
  for (size_t i = 0; i < rows.size(); ++i) {
    absl::StrAppend(&script, i == 0 ? "" : ", \\\n     ", "'",
                    MeanStem(rows[i]),
                    ".csv' using 1:2 with lines lw 2 title '",
                    rows[i].scheduler, " (B=", rows[i].batch, ")'");
  }
  return script + "\n";
}

absl::Status Write(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) return absl::InternalError(absl::StrCat("could not write ", path));
  return absl::OkStatus();
}

}  // namespace

MeanSd MeanAndSd(const std::vector<double>& values) {
  MeanSd out;
  double sum = 0;
  for (double v : values) {
    if (std::isnan(v)) continue;
    sum += v;
    ++out.n;
  }
  if (out.n == 0) return {std::nan(""), std::nan(""), 0};
  out.mean = sum / out.n;
  if (out.n == 1) {
    out.sd = std::nan("");
    return out;
  }
  double squares = 0;
  for (double v : values) {
    if (!std::isnan(v)) squares += (v - out.mean) * (v - out.mean);
  }
  out.sd = std::sqrt(squares / (out.n - 1));
  return out;
}

std::vector<GpuReplaySummary> SummariseGpuReplays(
    const std::vector<GpuReplayResult>& results) {
  std::vector<std::pair<std::string, uint32_t>> keys;
  std::map<std::pair<std::string, uint32_t>,
           std::vector<const GpuReplayResult*>>
      groups;
  for (const GpuReplayResult& run : results) {
    const auto key = std::pair(run.scheduler, run.batch);
    if (!groups.contains(key)) keys.push_back(key);
    groups[key].push_back(&run);
  }
  std::vector<GpuReplaySummary> rows;
  for (const auto& key : keys) {
    const std::vector<const GpuReplayResult*>& runs = groups[key];
    GpuReplaySummary row{.scheduler = key.first,
                         .batch = key.second,
                         .runs = static_cast<uint32_t>(runs.size())};
    std::vector<double> at_100, at_130, of_idle, of_capacity, pods, unplaced,
        wall, decide, solve;
    for (const GpuReplayResult* run : runs) {
      at_100.push_back(kPercent * run->UnallocatedAt(1.0));
      at_130.push_back(kPercent * run->UnallocatedAt(1.3));
      if (run->fragmentation.has_value()) {
        of_idle.push_back(kPercent * run->fragmentation->rate_of_idle());
        of_capacity.push_back(kPercent *
                              run->fragmentation->rate_of_capacity());
      }
      pods.push_back(static_cast<double>(run->pods));
      unplaced.push_back(static_cast<double>(run->unplaced));
      wall.push_back(run->wall_s);
      decide.insert(decide.end(), run->decide_ms.begin(), run->decide_ms.end());
      solve.insert(solve.end(), run->solve_ms.begin(), run->solve_ms.end());
    }
    row.unallocated_at_100 = MeanAndSd(at_100);
    row.unallocated_at_130 = MeanAndSd(at_130);
    row.fragmentation_of_idle_at_90 = MeanAndSd(of_idle);
    row.fragmentation_of_capacity_at_90 = MeanAndSd(of_capacity);
    row.pods = MeanAndSd(pods);
    row.unplaced = MeanAndSd(unplaced);
    row.wall_s = MeanAndSd(wall);
    row.decide_p50_ms = Percentile(decide, 0.5);
    row.decide_p99_ms = Percentile(decide, 0.99);
    row.solve_p50_ms = Percentile(solve, 0.5);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string GpuReplayTable(const std::vector<GpuReplaySummary>& rows) {
  std::string table = fmt::format(
      "{:<18} {:>5} {:>4} {:>14} {:>14} {:>14} {:>14} {:>8} {:>8} {:>8} "
      "{:>9} {:>9} {:>9}\n",
      "scheduler", "batch", "runs", "unalloc@100%", "unalloc@130%",
      "frag@90 %idle", "frag@90 %cap", "pods", "failed", "wall s", "p50 ms",
      "p99 ms", "solve p50");
  for (const GpuReplaySummary& row : rows) {
    absl::StrAppend(
        &table,
        fmt::format("{:<18} {:>5} {:>4} {:>14} {:>14} {:>14} {:>14} {:>8.0f} "
                    "{:>8.0f} {:>8.1f} {:>9.3f} {:>9.3f} {:>9.3f}\n",
                    row.scheduler, row.batch, row.runs,
                    Cell(row.unallocated_at_100, 2),
                    Cell(row.unallocated_at_130, 2),
                    Cell(row.fragmentation_of_idle_at_90, 1),
                    Cell(row.fragmentation_of_capacity_at_90, 2), row.pods.mean,
                    row.unplaced.mean, row.wall_s.mean, row.decide_p50_ms,
                    row.decide_p99_ms, row.solve_p50_ms));
  }
  return table;
}

absl::Status WriteGpuReplayCsvs(const std::vector<GpuReplayResult>& results,
                                const std::vector<GpuReplaySummary>& rows,
                                const std::string& dir) {
  for (const GpuReplayResult& run : results) {
    std::string csv = "arrived_pct,unallocated_pct\n";
    double last_kept = -1;
    for (size_t i = 0; i < run.curve.size(); ++i) {
      const GpuReplayPoint& point = run.curve[i];
      if (point.arrived - last_kept < 0.001 && i + 1 != run.curve.size()) {
        continue;
      }
      last_kept = point.arrived;
      absl::StrAppend(&csv,
                      fmt::format("{:.3f},{:.3f}\n", kPercent * point.arrived,
                                  kPercent * (1 - point.allocated)));
    }
    if (auto s = Write(absl::StrCat(dir, "/", RunStem(run), ".csv"), csv);
        !s.ok()) {
      return s;
    }
  }
  for (const GpuReplaySummary& row : rows) {
    std::string csv = "arrived_pct,unallocated_pct_mean\n";
    for (int level = 0; level <= 130; ++level) {
      std::vector<double> values;
      for (const GpuReplayResult& run : results) {
        if (run.scheduler != row.scheduler || run.batch != row.batch) continue;
        values.push_back(kPercent * run.UnallocatedAt(level / kPercent));
      }
      const MeanSd mean = MeanAndSd(values);
      if (mean.n == 0) continue;
      absl::StrAppend(&csv, fmt::format("{},{:.3f}\n", level, mean.mean));
    }
    if (auto s = Write(absl::StrCat(dir, "/", MeanStem(row), ".csv"), csv);
        !s.ok()) {
      return s;
    }
  }
  std::string summary =
      "scheduler,batch,runs,unallocated_100_mean,unallocated_100_sd,"
      "unallocated_130_mean,unallocated_130_sd,frag_idle_90_mean,"
      "frag_idle_90_sd,frag_capacity_90_mean,frag_capacity_90_sd,pods_mean,"
      "failed_mean,wall_s_mean,decide_p50_ms,decide_p99_ms,solve_p50_ms\n";
  for (const GpuReplaySummary& row : rows) {
    absl::StrAppend(
        &summary,
        fmt::format("{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},"
                    "{:.4f},{:.4f},{:.1f},{:.1f},{:.3f},{:.4f},{:.4f},{:.4f}\n",
                    row.scheduler, row.batch, row.runs,
                    row.unallocated_at_100.mean, row.unallocated_at_100.sd,
                    row.unallocated_at_130.mean, row.unallocated_at_130.sd,
                    row.fragmentation_of_idle_at_90.mean,
                    row.fragmentation_of_idle_at_90.sd,
                    row.fragmentation_of_capacity_at_90.mean,
                    row.fragmentation_of_capacity_at_90.sd, row.pods.mean,
                    row.unplaced.mean, row.wall_s.mean, row.decide_p50_ms,
                    row.decide_p99_ms, row.solve_p50_ms));
  }
  if (auto s = Write(dir + "/summary.csv", summary); !s.ok()) return s;
  return Write(dir + "/plot_gpu_replay.gp", PlotScript(rows));
}

}  // namespace flowsched::sim
