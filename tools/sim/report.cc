#include "tools/sim/report.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fmt/format.h"

namespace flowsched::sim {
namespace {

constexpr size_t kCdfPoints = 2'000;

absl::Status Open(const std::string& path, std::ofstream& out) {
  out.open(path);
  if (!out) return absl::UnavailableError("cannot write " + path);
  return absl::OkStatus();
}

double Fraction(int64_t part, int64_t total) {
  return total > 0 ? static_cast<double>(part) / static_cast<double>(total) : 0;
}

bool OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::string_view rest(path);
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    std::error_code ec;
    if (!dir.empty() &&
        std::filesystem::exists(std::filesystem::path(dir) / program, ec)) {
      return true;
    }
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return false;
}

}  // namespace

std::string FileStem(const std::string& scheduler) {
  std::string stem = scheduler;
  for (char& c : stem) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
      c = '-';
    }
  }
  return stem;
}

Summary Summarise(const SimResult& result) {
  Summary s{.scheduler = result.scheduler,
            .rounds = 0,
            .placed = result.placements.size(),
            .unplaced = result.unplaced,
            .preempted = result.preempted,
            .migrated = result.migrated};
  std::vector<double> latency;
  latency.reserve(result.placements.size());
  for (const PlacementRecord& p : result.placements) {
    latency.push_back(p.latency_ms());
  }
  s.latency_ms = sim::Summarise(latency);
  std::vector<double> rounds;
  double waiting = 0, slots = 0, cpu = 0, fairness = 0;
  for (const RoundRecord& r : result.rounds) {
    if (r.warmup) continue;  // reported as warmup_s
    rounds.push_back(r.runtime_ms);
    waiting += static_cast<double>(r.waiting);
    slots += r.slot_utilisation;
    cpu += r.cpu_utilisation;
    fairness += r.fairness;
  }
  s.rounds = rounds.size();
  s.round_ms = sim::Summarise(rounds);
  if (!rounds.empty()) {
    const auto n = static_cast<double>(rounds.size());
    s.mean_waiting = waiting / n;
    s.mean_slot_utilisation = slots / n;
    s.mean_cpu_utilisation = cpu / n;
    s.mean_fairness = fairness / n;
  }
  const int64_t total = result.locality.total();
  s.local = Fraction(result.locality.local, total);
  s.rack = Fraction(result.locality.rack, total);
  s.cross = Fraction(result.locality.remote, total);
  s.cross_bytes = result.locality.remote;
  s.warmup_cross =
      Fraction(result.warmup_locality.remote, result.warmup_locality.total());
  s.sim_s = static_cast<double>(result.sim_end_us) / 1e6;
  s.wall_s = result.wall_s;
  s.busy_s = result.busy_s;
  s.warmup_s = result.warmup_s;
  return s;
}

absl::Status WriteSchedulerCsvs(const SimResult& result,
                                const std::string& dir) {
  const std::string stem = dir + "/" + FileStem(result.scheduler);
  std::ofstream out;
  if (auto s = Open(stem + "_latency.csv", out); !s.ok()) return s;
  out << "task_id,job_id,submit_s,placed_s,latency_ms\n";
  std::vector<double> latency;
  for (const PlacementRecord& p : result.placements) {
    out << fmt::format("{},{},{:.6f},{:.6f},{:.3f}\n", p.task, p.job,
                       static_cast<double>(p.submit_us) / 1e6,
                       static_cast<double>(p.placed_us) / 1e6, p.latency_ms());
    latency.push_back(p.latency_ms());
  }
  out.close();
  std::sort(latency.begin(), latency.end());
  if (auto s = Open(stem + "_latency_cdf.csv", out); !s.ok()) return s;
  out << "latency_ms,fraction\n";
  for (const auto& [value, fraction] : Cdf(latency, kCdfPoints)) {
    out << fmt::format("{:.3f},{:.6f}\n", value, fraction);
  }
  out.close();
  if (auto s = Open(stem + "_rounds.csv", out); !s.ok()) return s;
  out << "round,start_s,runtime_ms,sync_ms,solve_ms,check_ms,extract_ms,"
         "algorithm,waiting,running,placed,preempted,migrated,stale,"
         "slot_utilisation,cpu_utilisation,fairness_jain,warmup\n";
  for (const RoundRecord& r : result.rounds) {
    out << fmt::format(
        "{},{:.6f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{},{},{},{},{},"
        "{:.4f},{:.4f},{:.4f},{}\n",
        r.round, static_cast<double>(r.start_us) / 1e6, r.runtime_ms, r.sync_ms,
        r.solve_ms, r.check_ms, r.extract_ms, r.algorithm, r.waiting, r.running,
        r.placed, r.preempted, r.migrated, r.stale, r.slot_utilisation,
        r.cpu_utilisation, r.fairness, r.warmup ? 1 : 0);
  }
  out.close();
  if (!out)
    return absl::UnavailableError("cannot write " + stem + "_rounds.csv");
  return absl::OkStatus();
}

absl::Status WriteSummaryCsv(const std::vector<Summary>& rows,
                             const std::string& dir) {
  std::ofstream out;
  if (auto s = Open(dir + "/summary.csv", out); !s.ok()) return s;
  out << "scheduler,rounds,placed,unplaced,latency_p50_ms,latency_p90_ms,"
         "latency_p99_ms,latency_max_ms,round_mean_ms,round_p99_ms,"
         "round_max_ms,mean_waiting,slot_utilisation,cpu_utilisation,"
         "preempted,migrated,local,rack,cross_rack,cross_rack_bytes,"
         "fairness_jain,sim_s,wall_s,busy_s,sim_per_wall,warmup_s,"
         "warmup_cross_rack\n";
  for (const Summary& s : rows) {
    out << fmt::format(
        "{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.1f},"
        "{:.4f},{:.4f},{},{},{:.4f},{:.4f},{:.4f},{},{:.4f},{:.3f},{:.3f},"
        "{:.3f},{:.3f},{:.3f},{:.4f}\n",
        s.scheduler, s.rounds, s.placed, s.unplaced, s.latency_ms.p50,
        s.latency_ms.p90, s.latency_ms.p99, s.latency_ms.max, s.round_ms.mean,
        s.round_ms.p99, s.round_ms.max, s.mean_waiting, s.mean_slot_utilisation,
        s.mean_cpu_utilisation, s.preempted, s.migrated, s.local, s.rack,
        s.cross, s.cross_bytes, s.mean_fairness, s.sim_s, s.wall_s, s.busy_s,
        s.sim_per_wall(), s.warmup_s, s.warmup_cross);
  }
  out.close();
  if (!out)
    return absl::UnavailableError("cannot write " + dir + "/summary.csv");
  return absl::OkStatus();
}

std::string SummaryTable(const std::vector<Summary>& rows) {
  std::string table = fmt::format(
      "{:<22} {:>6} {:>7} {:>5} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>6} "
      "{:>5} {:>5} {:>6} {:>6} {:>6} {:>5} {:>8}\n",
      "scheduler", "rounds", "placed", "unpl", "p50_ms", "p90_ms", "p99_ms",
      "max_ms", "rnd_ms", "rnd_max", "util", "preem", "migr", "local", "rack",
      "cross", "jain", "sim/wall");
  for (const Summary& s : rows) {
    table += fmt::format(
        "{:<22} {:>6} {:>7} {:>5} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} "
        "{:>8.1f} {:>8.1f} {:>5.1f}% {:>5} {:>5} {:>5.1f}% {:>5.1f}% "
        "{:>5.1f}% {:>5.2f} {:>8.1f}\n",
        s.scheduler, s.rounds, s.placed, s.unplaced, s.latency_ms.p50,
        s.latency_ms.p90, s.latency_ms.p99, s.latency_ms.max, s.round_ms.mean,
        s.round_ms.max, 100 * s.mean_slot_utilisation, s.preempted, s.migrated,
        100 * s.local, 100 * s.rack, 100 * s.cross, s.mean_fairness,
        s.sim_per_wall());
  }
  return table;
}

std::string WritePlots(const std::vector<SimResult>& results,
                       const std::string& dir) {
  // Both plots use a log axis, which holds only positive values: a
  // scheduler with no positive latency (a run too short to place anything
  // after time 0) or no positive round time has nothing to draw there, and
  // a plot whose every series is empty is an error to gnuplot ("x range is
  // invalid"), so such series are left out and such plots skipped.
  std::string cdf_plots, runtime_plots;
  for (const SimResult& r : results) {
    const std::string stem = FileStem(r.scheduler);
    const bool has_latency = std::any_of(
        r.placements.begin(), r.placements.end(),
        [](const PlacementRecord& p) { return p.latency_ms() > 0; });
    const bool has_runtime = std::any_of(
        r.rounds.begin(), r.rounds.end(),
        [](const RoundRecord& round) { return round.runtime_ms > 0; });
    if (has_latency) {
      if (!cdf_plots.empty()) cdf_plots += ", \\\n     ";
      cdf_plots += fmt::format(
          "'{}_latency_cdf.csv' using 1:2 with lines lw 2 title '{}'", stem,
          r.scheduler);
    }
    if (has_runtime && r.scheduler.rfind("flow:", 0) == 0) {
      if (!runtime_plots.empty()) runtime_plots += ", \\\n     ";
      runtime_plots += fmt::format(
          "'{}_rounds.csv' using 2:3 with points pt 7 ps 0.8 title '{}'", stem,
          r.scheduler);
    }
  }
  std::string script =
      "# Generated by flowsched simulate. Run in this directory:\n"
      "#   gnuplot plots.gp\n"
      "set datafile separator ','\n"
      "set terminal png size 900,600 noenhanced\n"
      "set grid\n";
  std::vector<std::string> drawn;
  if (cdf_plots.empty()) {
    script += "# latency_cdf.png: no scheduler placed a task after time 0\n";
  } else {
    script +=
        "set output 'latency_cdf.png'\n"
        "set title 'Placement latency (submission to placement, simulated)'\n"
        "set xlabel 'placement latency [ms]'\n"
        "set ylabel 'fraction of tasks'\n"
        "set key bottom right\n"
        "set logscale x\n"
        "set yrange [0:1]\n";
    script += "plot " + cdf_plots + "\n";
    drawn.push_back(dir + "/latency_cdf.png");
  }
  if (runtime_plots.empty()) {
    script += "# solver_runtime.png: no flow scheduler ran a timed round\n";
  } else {
    script +=
        "set output 'solver_runtime.png'\n"
        "set title 'Scheduling round runtime over simulated time'\n"
        "set xlabel 'simulated time [s]'\n"
        "set ylabel 'round runtime [ms]'\n"
        "set key top right\n"
        "unset logscale x\n"
        "set logscale y\n"
        "set autoscale\n";
    script += "plot " + runtime_plots + "\n";
    drawn.push_back(dir + "/solver_runtime.png");
  }
  const std::string path = dir + "/plots.gp";
  {
    std::ofstream out(path);
    out << script;
    if (!out) return "could not write " + path;
  }
  if (drawn.empty()) {
    return "no plots: nothing was placed after time 0 and no flow round was "
           "timed";
  }
  if (std::string problem = RunGnuplot(dir, "plots.gp"); !problem.empty()) {
    return problem;
  }
  std::string line = "plots:";
  for (const std::string& png : drawn) line += " " + png;
  return line;
}

std::string RunGnuplot(const std::string& dir, const std::string& script) {
  if (!OnPath("gnuplot")) {
    return fmt::format(
        "gnuplot not found: install it (Debian: gnuplot-nox) and run "
        "`cd {} && gnuplot {}`",
        dir, script);
  }
  // The script names its CSVs relative to `dir`.
  if (dir.find('\'') != std::string::npos ||
      script.find('\'') != std::string::npos) {
    return "not running gnuplot: the output directory name has a quote";
  }
  const std::string command =
      fmt::format("cd '{}' && gnuplot '{}' 2>&1", dir, script);
  if (std::system(command.c_str()) != 0) {  // NOLINT(cert-env33-c): fixed
    return fmt::format("gnuplot failed; rerun `cd {} && gnuplot {}`", dir,
                       script);
  }
  return {};
}

}  // namespace flowsched::sim
