#pragma once

// Starting and stopping the local deployment of `flowsched up`: embedded
// broker (unless --brokers points elsewhere), graph manager, solver
// worker(s), each a detached process of this same executable with its log
// in <data-dir>/logs, its pid file in <data-dir>/pids (process_control.h)
// and, once started, its ready marker in <data-dir>/ready (ready_marker.h).
// A service counts as running only when its pid file names a live process
// that is not a zombie and is the process `up` started (start time, or
// the command line for old pid files).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/flowsched/common_flags.h"
#include "tools/flowsched/deployment.h"
#include "tools/flowsched/process_control.h"

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

// `flowsched up`: resolves the data directory's deployment (deployment.h:
// the stored settings, or `request` on the first `up`; with
// `reset_deployment`, which needs every service stopped, `request`
// replaces the stored ones), stores it, points `flags` at its brokers,
// topics and log format, and starts the services like StartServices.
// FailedPrecondition for a request that contradicts the stored settings
// or a reset while services run; DataLoss for a garbled deployment file;
// otherwise as StartServices.
absl::Status Up(CommonFlags& flags, const DeploymentRequest& request,
                bool reset_deployment, int start_timeout_ms);

// Starts whichever service is not running (so `up` after a crash restarts
// just the dead one), then waits until every service runs and is ready.
// Unavailable or DeadlineExceeded naming each service that is not running
// or not ready, and its log.
absl::Status StartServices(const CommonFlags& flags, const UpOptions& options);
// Stops what the pid files name (only processes that are still the ones
// `up` started) and removes pid files and ready markers.
absl::Status StopServices(const CommonFlags& flags);

// "broker", "graph-manager", "solver-worker".
const std::vector<std::string>& ServiceNames();
// The solver workers beyond the first that have a pid file:
// "solver-worker-2", "solver-worker-3", ...
std::vector<std::string> ExtraSolverWorkerNames(const CommonFlags& flags);

// What one service instance ("broker", "graph-manager", "solver-worker",
// "solver-worker-2", ...) is doing now.
struct ServiceState {
  std::string name;
  std::optional<PidRecord> pid;  // none: no (readable) pid file
  ProcessCheck process = ProcessCheck::kGone;
  // Running and ready: the broker wrote the bootstrap file, a service its
  // ready marker.
  bool ready = false;
};
[[nodiscard]] ServiceState CheckService(const CommonFlags& flags,
                                        const std::string& name);
// Every service instance (ServiceNames and the extra solver workers) whose
// process runs now.
[[nodiscard]] std::vector<ServiceState> RunningServices(
    const CommonFlags& flags);
// "running (pid N), ready", "running (pid N), not ready", "not running" or
// "not running (pid N exited)" (or "... exited (zombie)", "... pid reused
// by another process").
std::string DescribeService(const CommonFlags& flags, const std::string& name);

}  // namespace flowsched::tools
