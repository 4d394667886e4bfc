#pragma once

// `flowsched bench e2e`: a workload replayed through the embedded broker and
// the real services (`flowsched broker`, `graph-manager`, `solver-worker`
// processes, started like `flowsched up`), measuring event-to-placement
// latency, the graph manager's ingest rate, rounds per second and the
// graph manager's restart time with the full state. See README.md.

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "tools/e2e/e2e_report.h"
#include "tools/flowsched/common_flags.h"

namespace flowsched::e2e {

struct E2eOptions {
  uint64_t machines = 1000;
  uint32_t slots = 12;
  uint64_t racks = 0;        // 0: one per 40 machines
  uint64_t tasks = 0;        // 0: utilisation x slots
  double utilisation = 0.9;  // used when tasks is 0
  uint64_t jobs = 0;         // 0: one per 83 tasks (the Google trace mean)
  double churn_per_s = 100;  // steady-state arrivals + completions per second
  double duration_s = 20;    // steady-state window
  std::string policy = "load-spreading";
  std::string algorithm = "incremental";
  // What each task asks for: "cpu-mem" (250-1000 CPU millis and 1 GiB, so
  // the policy's resource filters are on) or "none" (a slot each).
  std::string requests = "cpu-mem";
  std::string restart_signal = "term";  // term, kill or none
  int phase_timeout_s = 600;  // give up on any one wait after this long
  uint64_t seed = 1;
  // > 0: scrape every service's /metrics this often, as Prometheus would
  // (needs the common flag --metrics-address); 0: no scraping.
  double scrape_every_s = 0;
};

// Runs on a fresh deployment in flags.data_dir (the caller prepares the
// directory) and stops it at the end unless `keep_running`. Progress goes
// to `progress`, once a second. FailedPrecondition if a phase did not
// finish in time (the services are stopped all the same).
absl::StatusOr<E2eResult> RunE2eBench(const tools::CommonFlags& flags,
                                      const E2eOptions& options,
                                      bool keep_running,
                                      std::ostream& progress);

}  // namespace flowsched::e2e
