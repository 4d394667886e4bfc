#pragma once

// Starting and stopping flowsched's own background processes for `up`,
// `down` and `demo`: each runs detached in its own session with its output
// in a log file, and its pid is kept in <data-dir>/pids/<name>.pid.

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace flowsched::tools {

// The path of the running executable (/proc/self/exe).
absl::StatusOr<std::string> SelfExecutable();

// Starts `argv` detached with stdout and stderr appended to `log_path`.
absl::StatusOr<pid_t> SpawnDetached(const std::vector<std::string>& argv,
                                    const std::string& log_path);

absl::Status WritePidFile(const std::string& path, pid_t pid);
// NotFound when there is no pid file; InvalidArgument for a garbled one.
absl::StatusOr<pid_t> ReadPidFile(const std::string& path);
[[nodiscard]] bool ProcessAlive(pid_t pid);

// SIGTERM, then SIGKILL after `timeout_ms`. OK when the process is gone.
absl::Status StopProcess(pid_t pid, int timeout_ms);

// Waits until `path` exists and is non-empty; returns its first line.
// DeadlineExceeded after `timeout_ms`; Unavailable if `watch_pid` died.
absl::StatusOr<std::string> WaitForFile(const std::string& path,
                                        int timeout_ms, pid_t watch_pid);

}  // namespace flowsched::tools
