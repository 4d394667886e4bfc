#pragma once

// Starting and stopping the local deployment of `flowsched up`: embedded
// broker (unless --brokers points elsewhere), graph manager, solver worker,
// each a detached process of this same executable with its log in
// <data-dir>/logs and its pid in <data-dir>/pids.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/flowsched/common_flags.h"

namespace flowsched::tools {

struct UpOptions {
  std::string policy = "load-spreading";
  std::string algorithm = "incremental";
  uint64_t cut_every_events = 0;
  bool cut_at_ticks = false;
  // Solver workers to run; with more than one they run as --standby
  // members of one group (one active, the others take over). 0: as many as
  // the last `up` started (their pid files), at least 1.
  int solver_workers = 0;
  // The graph manager runs with --ha (leader lease; standby until held).
  bool ha = false;
  int start_timeout_ms = 30'000;
};

// Starts whichever of the three is not running (so `up` after a crash
// restarts just the dead service).
absl::Status StartServices(const CommonFlags& flags, const UpOptions& options);
absl::Status StopServices(const CommonFlags& flags);

// "broker", "graph-manager", "solver-worker".
const std::vector<std::string>& ServiceNames();
// The solver workers beyond the first that have a pid file:
// "solver-worker-2", "solver-worker-3", ...
std::vector<std::string> ExtraSolverWorkerNames(const CommonFlags& flags);
// "running (pid N)", "not running" or "stopped (stale pid N)".
std::string DescribeService(const CommonFlags& flags, const std::string& name);

}  // namespace flowsched::tools
