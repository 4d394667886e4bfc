#pragma once

// What `flowsched bench e2e` measured, and how it is printed: a readable
// table and one CSV row (with a header) per run.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace flowsched::e2e {

struct LatencySummary {
  uint64_t count = 0;
  double min_ms = 0, p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0,
         mean_ms = 0;
};

// Nearest-rank percentiles (p99 of 20 samples is the maximum).
LatencySummary Summarize(std::vector<double> samples_ms);

struct E2eResult {
  // The run.
  uint64_t machines = 0;
  uint32_t slots = 0;
  uint64_t jobs = 0;
  uint64_t tasks = 0;
  double utilisation = 0;  // tasks / slots
  double churn_per_s = 0;
  double duration_s = 0;
  std::string policy;
  std::string algorithm;
  // Ingest burst: `burst_events` TaskSubmitted records produced while the
  // graph manager was stopped, then applied after it started.
  uint64_t burst_events = 0;
  double produce_events_per_s = 0;  // the harness's producer, for reference
  double ingest_events_per_s = 0;   // graph manager, from its status reports
  double ingest_seconds = 0;        // first status to all applied (bound)
  // The graph manager's CPU time from its start to all applied (includes
  // rounds cut meanwhile): a rate that does not depend on the neighbours.
  double ingest_cpu_seconds = 0;
  double burst_placed_seconds = 0;  // graph manager ready to all placed
  // Graph manager ready to the end of a round after the last placement, or
  // to a second without one (the steady window opens then).
  double burst_settled_seconds = 0;
  // Steady state.
  uint64_t arrivals = 0;
  uint64_t completions = 0;
  LatencySummary latency;
  uint64_t unplaced = 0;  // submitted tasks with no placement at the end
  uint64_t rounds = 0;    // completed in the steady window
  double rounds_per_s = 0;
  double solve_p50_ms = 0;       // graph manager status, whole run
  double round_trip_p50_ms = 0;  // graph manager status, whole run
  uint64_t events_rejected = 0;
  // CPU seconds the graph manager and the solver worker spent in the steady
  // window: what metrics (or anything else) cost them, whatever the
  // neighbours do.
  double steady_manager_cpu_s = 0;
  double steady_worker_cpu_s = 0;
  // Scrapes of the services' /metrics over the whole run (scrape_every_s).
  double scrape_every_s = 0;
  uint64_t scrapes = 0;
  uint64_t scrape_failures = 0;  // a service restarting, say
  double scrape_mean_ms = 0;
  double scrape_mean_kib = 0;
  // Restart with the full state.
  std::string restart_signal;   // "term", "kill" or "none"
  uint64_t restart_tasks = 0;   // tasks the restarted graph manager restored
  double restart_stop_ms = 0;   // signal to exit
  double restart_ready_ms = 0;  // spawn to status.json of the new process
  double restart_ready_cpu_ms = 0;   // its CPU time when it was ready
  double restart_next_round_ms = 0;  // spawn to its first complete round
};

void PrintTable(const E2eResult& result, std::ostream& out);
// Writes the header and one row; overwrites `path`.
absl::Status WriteCsv(const E2eResult& result, const std::string& path);

}  // namespace flowsched::e2e
