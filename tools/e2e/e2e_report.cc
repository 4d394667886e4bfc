#include "tools/e2e/e2e_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "fmt/format.h"
#include "fmt/ostream.h"
#include "services/common/percentile.h"

namespace flowsched::e2e {

LatencySummary Summarize(std::vector<double> samples_ms) {
  LatencySummary s;
  if (samples_ms.empty()) return s;
  std::sort(samples_ms.begin(), samples_ms.end());
  const auto rank = [&](double p) {
    return NearestRankPercentile(samples_ms, p);
  };
  s.count = samples_ms.size();
  s.min_ms = samples_ms.front();
  s.p50_ms = rank(0.50);
  s.p90_ms = rank(0.90);
  s.p99_ms = rank(0.99);
  s.max_ms = samples_ms.back();
  s.mean_ms = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0) /
              static_cast<double>(samples_ms.size());
  return s;
}

void PrintTable(const E2eResult& r, std::ostream& out) {
  const auto row = [&](const std::string& name, const std::string& value) {
    fmt::print(out, "  {:<34} {}\n", name, value);
  };
  fmt::print(out,
             "flowsched bench e2e: {} machines x {} slots, {} tasks in {} "
             "jobs ({:.0f}% of slots), policy {}, solver {}\n",
             r.machines, r.slots, r.tasks, r.jobs, 100 * r.utilisation,
             r.policy, r.algorithm);
  fmt::print(out, "ingest (burst while the graph manager was stopped)\n");
  row("burst events", fmt::format("{}", r.burst_events));
  row("produced by the harness",
      fmt::format("{:.0f} events/s", r.produce_events_per_s));
  row("ingested by the graph manager",
      fmt::format("{:.0f} events/s", r.ingest_events_per_s));
  row("all applied after", fmt::format("{:.2f} s", r.ingest_seconds));
  row("graph manager CPU for the burst",
      fmt::format(
          "{:.2f} s ({:.0f} events per CPU second)", r.ingest_cpu_seconds,
          r.ingest_cpu_seconds > 0
              ? static_cast<double>(r.burst_events) / r.ingest_cpu_seconds
              : 0.0));
  row("all placed after", fmt::format("{:.2f} s", r.burst_placed_seconds));
  row("settled after (the next round done)",
      fmt::format("{:.2f} s", r.burst_settled_seconds));
  fmt::print(out, "steady state ({:.0f} s, churn {:.0f} events/s)\n",
             r.duration_s, r.churn_per_s);
  row("arrivals / completions",
      fmt::format("{} / {}", r.arrivals, r.completions));
  row("event-to-placement latency",
      fmt::format("p50 {:.1f} ms, p90 {:.1f} ms, p99 {:.1f} ms, max {:.1f} ms",
                  r.latency.p50_ms, r.latency.p90_ms, r.latency.p99_ms,
                  r.latency.max_ms));
  row("  samples, min, mean",
      fmt::format("{}, {:.1f} ms, {:.1f} ms", r.latency.count, r.latency.min_ms,
                  r.latency.mean_ms));
  row("unplaced at the end", fmt::format("{}", r.unplaced));
  row("rounds", fmt::format("{} ({:.2f} per s)", r.rounds, r.rounds_per_s));
  row("solve p50 / round trip p50",
      fmt::format("{:.1f} ms / {:.1f} ms", r.solve_p50_ms,
                  r.round_trip_p50_ms));
  row("events rejected", fmt::format("{}", r.events_rejected));
  row("CPU in the window: manager / worker",
      fmt::format("{:.2f} s / {:.2f} s", r.steady_manager_cpu_s,
                  r.steady_worker_cpu_s));
  if (r.scrape_every_s > 0) {
    row("/metrics scrapes (whole run)",
        fmt::format("{} every {:g} s, {} failed, mean {:.1f} ms, {:.0f} KiB",
                    r.scrapes, r.scrape_every_s, r.scrape_failures,
                    r.scrape_mean_ms, r.scrape_mean_kib));
  }
  if (r.restart_signal != "none") {
    fmt::print(out, "restart (SIG{} with the full state)\n",
               r.restart_signal == "kill" ? "KILL" : "TERM");
    row("tasks restored", fmt::format("{}", r.restart_tasks));
    row("stopped after", fmt::format("{:.0f} ms", r.restart_stop_ms));
    row("ready after (spawn to status)",
        fmt::format("{:.0f} ms (CPU {:.0f} ms)", r.restart_ready_ms,
                    r.restart_ready_cpu_ms));
    row("next round complete after",
        fmt::format("{:.0f} ms", r.restart_next_round_ms));
  }
}

absl::Status WriteCsv(const E2eResult& r, const std::string& path) {
  std::ofstream out(path, std::ios::trunc);
  out << "machines,slots,jobs,tasks,utilisation,churn_per_s,duration_s,policy,"
         "algorithm,burst_events,produce_events_per_s,ingest_events_per_s,"
         "ingest_s,ingest_cpu_s,burst_placed_s,arrivals,completions,latency_"
         "samples,"
         "latency_min_ms,latency_p50_ms,latency_p90_ms,latency_p99_ms,"
         "latency_max_ms,latency_mean_ms,unplaced,rounds,rounds_per_s,"
         "solve_p50_ms,round_trip_p50_ms,events_rejected,restart_signal,"
         "restart_tasks,restart_stop_ms,restart_ready_ms,"
         "restart_ready_cpu_ms,restart_next_round_ms,steady_manager_cpu_s,"
         "steady_worker_cpu_s,scrape_every_s,scrapes,scrape_failures,"
         "scrape_mean_ms,scrape_mean_kib,burst_settled_s\n";
  out << fmt::format(
      "{},{},{},{},{:.4f},{:.1f},{:.1f},{},{},{},{:.0f},{:.0f},{:.3f},{:.3f},{:"
      ".3f},"
      "{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{:.3f},{:.3f},"
      "{:.3f},{},{},{},{:.1f},{:.1f},{:.1f},{:.1f},{:.3f},{:.3f},{:g},{},{},"
      "{:.3f},{:.1f},{:.3f}\n",
      r.machines, r.slots, r.jobs, r.tasks, r.utilisation, r.churn_per_s,
      r.duration_s, r.policy, r.algorithm, r.burst_events,
      r.produce_events_per_s, r.ingest_events_per_s, r.ingest_seconds,
      r.ingest_cpu_seconds, r.burst_placed_seconds, r.arrivals, r.completions,
      r.latency.count, r.latency.min_ms, r.latency.p50_ms, r.latency.p90_ms,
      r.latency.p99_ms, r.latency.max_ms, r.latency.mean_ms, r.unplaced,
      r.rounds, r.rounds_per_s, r.solve_p50_ms, r.round_trip_p50_ms,
      r.events_rejected, r.restart_signal, r.restart_tasks, r.restart_stop_ms,
      r.restart_ready_ms, r.restart_ready_cpu_ms, r.restart_next_round_ms,
      r.steady_manager_cpu_s, r.steady_worker_cpu_s, r.scrape_every_s,
      r.scrapes, r.scrape_failures, r.scrape_mean_ms, r.scrape_mean_kib,
      r.burst_settled_seconds);
  out.flush();
  if (!out.good()) {
    return absl::UnavailableError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

}  // namespace flowsched::e2e
