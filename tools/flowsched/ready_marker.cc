#include "tools/flowsched/ready_marker.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace flowsched::tools {

std::string ReadyMarkerPath(const std::string& data_dir, pid_t pid) {
  return absl::StrCat(data_dir, "/ready/", pid);
}

ReadyMarker::ReadyMarker(std::string data_dir, std::string service) {
  const pid_t self = ::getpid();
  std::error_code ec;
  std::filesystem::create_directories(data_dir + "/ready", ec);
  auto stat = ReadProcessStat(self);
  const std::string path = ReadyMarkerPath(data_dir, self);
  absl::Status written = WriteFileAtomically(
      path, absl::StrCat(service, " ", stat.ok() ? stat->start_time : 0, "\n"));
  if (!written.ok()) {
    spdlog::warn("cannot mark {} ready: {}", service, written.ToString());
    return;
  }
  path_ = path;
}

ReadyMarker::~ReadyMarker() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

bool IsReady(const std::string& data_dir, const std::string& service,
             const PidRecord& record) {
  std::ifstream in(ReadyMarkerPath(data_dir, record.pid));
  std::string name, start_text;
  if (!(in >> name >> start_text) || name != service) return false;
  uint64_t start_time = 0;
  if (!absl::SimpleAtoi(start_text, &start_time)) return false;
  return !record.start_time.has_value() || *record.start_time == start_time;
}

void RemoveReadyMarker(const std::string& data_dir, pid_t pid) {
  std::error_code ec;
  std::filesystem::remove(ReadyMarkerPath(data_dir, pid), ec);
}

}  // namespace flowsched::tools
