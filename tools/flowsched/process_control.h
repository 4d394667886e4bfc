#pragma once

// Starting and stopping flowsched's own background processes for `up`,
// `down` and `demo`: each runs detached in its own session with its output
// in a log file, and its pid is kept in <data-dir>/pids/<name>.pid as
// "<pid> <start time>" (the start time in clock ticks since boot, field 22
// of /proc/<pid>/stat), so a reused pid is not mistaken for the service.
// Pid files of older versions hold only "<pid>".

#include <sys/types.h>

#include <cstdint>
#include <optional>
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

// What /proc/<pid>/stat says about a process.
struct ProcessStat {
  char state = '?';         // R, S, D, T, Z (zombie), X (dead), ...
  uint64_t start_time = 0;  // clock ticks after boot
};
// NotFound when there is no such process; DataLoss for an unparsable stat.
absl::StatusOr<ProcessStat> ReadProcessStat(pid_t pid);
// Parses the text of a /proc/<pid>/stat file (the command name may hold
// spaces and parentheses). InvalidArgument when it is malformed.
absl::StatusOr<ProcessStat> ParseProcessStat(const std::string& text);

// A pid file's content. start_time is unknown for old pid files.
struct PidRecord {
  pid_t pid = 0;
  std::optional<uint64_t> start_time;
};

// Writes "<pid> <start time>" (start time read now; just the pid if the
// process is already gone). Atomic: temp file + rename.
absl::Status WritePidFile(const std::string& path, pid_t pid);
// NotFound when there is no pid file; InvalidArgument for a garbled one.
absl::StatusOr<PidRecord> ReadPidRecord(const std::string& path);
// The pid alone (see ReadPidRecord).
absl::StatusOr<pid_t> ReadPidFile(const std::string& path);

// Who the process of a pid file must be when its start time is unknown:
// argv[0]'s file name and argv[1] (e.g. "flowsched", "graph-manager").
struct ProcessIdentity {
  std::string program = "flowsched";
  std::string subcommand;
};

// Why a pid file's process counts as running or not.
enum class ProcessCheck {
  kRunning,
  kGone,          // no such process
  kZombie,        // exited, not reaped yet (state Z or X)
  kOtherProcess,  // the pid was reused: start time or command line differ
};
// Running means: the process exists, is not a zombie, and is the one the
// pid file names: same start time when the record has one, otherwise a
// command line matching `identity`.
[[nodiscard]] ProcessCheck CheckProcess(const PidRecord& record,
                                        const ProcessIdentity& identity);
[[nodiscard]] const char* ProcessCheckName(ProcessCheck check);

// True while `pid` exists and is not a zombie (reaps it first if it is an
// exited child of this process).
[[nodiscard]] bool ProcessAlive(pid_t pid);

// SIGTERM, then SIGKILL after `timeout_ms`. OK when the process is gone.
absl::Status StopProcess(pid_t pid, int timeout_ms);

// Waits until `path` exists and is non-empty; returns its first line.
// DeadlineExceeded after `timeout_ms`; Unavailable if `watch_pid` died.
absl::StatusOr<std::string> WaitForFile(const std::string& path, int timeout_ms,
                                        pid_t watch_pid);

// Writes `content` to `path` atomically: a temp file beside it, fsync,
// rename. Unavailable on an I/O error.
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& content);

}  // namespace flowsched::tools
