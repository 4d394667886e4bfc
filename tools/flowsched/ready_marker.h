#pragma once

// Readiness of a background service: once a service has started (the
// graph manager recovered its state, the solver worker joined the rounds
// topic) it writes <data-dir>/ready/<pid> holding "<service> <start
// time>", and removes it when it exits normally. `flowsched up` reports a
// service ready only when the marker names the process its pid file names
// (pid and start time), so a marker left by a SIGKILLed process never
// counts for its successor.

#include <sys/types.h>

#include <string>

#include "tools/flowsched/process_control.h"

namespace flowsched::tools {

// Owns this process's marker: writes it on construction (a failure is
// logged, not fatal: the service runs, `up` reports it not ready) and
// removes it on destruction.
class ReadyMarker {
 public:
  ReadyMarker(std::string data_dir, std::string service);
  ~ReadyMarker();
  ReadyMarker(const ReadyMarker&) = delete;
  ReadyMarker& operator=(const ReadyMarker&) = delete;

 private:
  std::string path_;
};

[[nodiscard]] std::string ReadyMarkerPath(const std::string& data_dir,
                                          pid_t pid);
// True when the process of `record` wrote its marker as `service` (and,
// when the record has a start time, it is the same process).
[[nodiscard]] bool IsReady(const std::string& data_dir,
                           const std::string& service, const PidRecord& record);
// Removes the marker of `pid` (a process that is gone).
void RemoveReadyMarker(const std::string& data_dir, pid_t pid);

}  // namespace flowsched::tools
