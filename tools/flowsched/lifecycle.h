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
// "running (pid N)", "not running" or "stopped (stale pid N)".
std::string DescribeService(const CommonFlags& flags, const std::string& name);

}  // namespace flowsched::tools
