#include "tools/flowsched/process_control.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "services/common/status_macros.h"

namespace flowsched::tools {

absl::StatusOr<std::string> SelfExecutable() {
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) {
    return absl::InternalError(
        absl::StrCat("cannot read /proc/self/exe: ", std::strerror(errno)));
  }
  return std::string(buffer, static_cast<size_t>(n));
}

absl::StatusOr<pid_t> SpawnDetached(const std::vector<std::string>& argv,
                                    const std::string& log_path) {
  const int log_fd =
      ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot open log file ", log_path, ": ", std::strerror(errno)));
  }
  std::vector<char*> args;
  for (const std::string& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    return absl::UnavailableError(
        absl::StrCat("fork failed: ", std::strerror(errno)));
  }
  if (pid == 0) {
    ::setsid();
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(log_fd);
  return pid;
}

absl::StatusOr<ProcessStat> ParseProcessStat(const std::string& text) {
  // "<pid> (<comm>) <state> <ppid> ...": comm may hold ") ", so the fields
  // start after the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) {
    return absl::InvalidArgumentError("process stat without '(comm)'");
  }
  std::vector<absl::string_view> fields = absl::StrSplit(
      absl::string_view(text).substr(close + 1), ' ', absl::SkipEmpty());
  // fields[0] is field 3 (state); start time is field 22.
  constexpr size_t kStartTime = 22 - 3;
  ProcessStat stat;
  if (fields.size() <= kStartTime || fields[0].size() != 1 ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(fields[kStartTime]),
                        &stat.start_time)) {
    return absl::InvalidArgumentError("process stat has too few fields");
  }
  stat.state = fields[0][0];
  return stat;
}

absl::StatusOr<ProcessStat> ReadProcessStat(pid_t pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/stat");
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("no process ", pid));
  std::stringstream text;
  text << in.rdbuf();
  auto stat = ParseProcessStat(text.str());
  if (!stat.ok()) {
    return absl::DataLossError(
        absl::StrCat(path, ": ", stat.status().message()));
  }
  return stat;
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& content) {
  const std::string temp = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd =
      ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot write ", temp, ": ", std::strerror(errno)));
  }
  size_t written = 0;
  while (written < content.size()) {
    const ssize_t n =
        ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  const bool ok = written == content.size() && ::fsync(fd) == 0;
  const int saved_errno = errno;
  ::close(fd);
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = ok ? errno : saved_errno;
    ::unlink(temp.c_str());
    return absl::UnavailableError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

absl::Status WritePidFile(const std::string& path, pid_t pid) {
  std::string content = absl::StrCat(pid);
  if (auto stat = ReadProcessStat(pid); stat.ok()) {
    absl::StrAppend(&content, " ", stat->start_time);
  }
  return WriteFileAtomically(path, content + "\n");
}

absl::StatusOr<PidRecord> ReadPidRecord(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("no pid file ", path));
  std::string line;
  std::getline(in, line);
  std::vector<absl::string_view> fields =
      absl::StrSplit(line, ' ', absl::SkipEmpty());
  PidRecord record;
  int pid = 0;
  uint64_t start_time = 0;
  if (fields.empty() || fields.size() > 2 ||
      !absl::SimpleAtoi(fields[0], &pid) || pid <= 1 ||
      (fields.size() == 2 && !absl::SimpleAtoi(fields[1], &start_time))) {
    return absl::InvalidArgumentError(
        absl::StrCat("pid file ", path, " holds '", line, "'"));
  }
  record.pid = static_cast<pid_t>(pid);
  if (fields.size() == 2) record.start_time = start_time;
  return record;
}

absl::StatusOr<pid_t> ReadPidFile(const std::string& path) {
  FLOWSCHED_ASSIGN_OR_RETURN(PidRecord record, ReadPidRecord(path));
  return record.pid;
}

namespace {

// argv of a process from /proc/<pid>/cmdline; empty if unreadable.
std::vector<std::string> CommandLine(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/cmdline"));
  std::vector<std::string> argv;
  std::string arg;
  while (std::getline(in, arg, '\0')) argv.push_back(arg);
  return argv;
}

void ReapIfChild(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, WNOHANG);
}

}  // namespace

ProcessCheck CheckProcess(const PidRecord& record,
                          const ProcessIdentity& identity) {
  ReapIfChild(record.pid);
  auto stat = ReadProcessStat(record.pid);
  if (!stat.ok()) return ProcessCheck::kGone;
  if (stat->state == 'Z' || stat->state == 'X') return ProcessCheck::kZombie;
  if (record.start_time.has_value()) {
    return *record.start_time == stat->start_time ? ProcessCheck::kRunning
                                                  : ProcessCheck::kOtherProcess;
  }
  const std::vector<std::string> argv = CommandLine(record.pid);
  if (argv.size() < 2 || argv[1] != identity.subcommand ||
      std::filesystem::path(argv[0]).filename() != identity.program) {
    return ProcessCheck::kOtherProcess;
  }
  return ProcessCheck::kRunning;
}

const char* ProcessCheckName(ProcessCheck check) {
  switch (check) {
    case ProcessCheck::kRunning:
      return "running";
    case ProcessCheck::kGone:
      return "exited";
    case ProcessCheck::kZombie:
      return "exited (zombie)";
    case ProcessCheck::kOtherProcess:
      return "pid reused by another process";
  }
  return "unknown";
}

bool ProcessAlive(pid_t pid) {
  // Reap it if it is our exited child, so it does not linger as a zombie;
  // an orphan's zombie may stay until its new parent reaps it (or never,
  // under an init that does not reap), and is not alive either.
  ReapIfChild(pid);
  auto stat = ReadProcessStat(pid);
  if (!stat.ok()) {
    // No /proc entry: gone. An unreadable one: ask the kernel.
    return stat.status().code() != absl::StatusCode::kNotFound &&
           ::kill(pid, 0) == 0;
  }
  return stat->state != 'Z' && stat->state != 'X';
}

absl::Status StopProcess(pid_t pid, int timeout_ms) {
  if (!ProcessAlive(pid)) return absl::OkStatus();
  ::kill(pid, SIGTERM);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!ProcessAlive(pid)) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  for (int i = 0; i < 100 && ProcessAlive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ProcessAlive(pid) ? absl::InternalError(absl::StrCat(
                                 "process ", pid, " survived SIGKILL"))
                           : absl::OkStatus();
}

absl::StatusOr<std::string> WaitForFile(const std::string& path, int timeout_ms,
                                        pid_t watch_pid) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path);
    std::string line;
    if (in && std::getline(in, line) && !line.empty()) return line;
    if (watch_pid > 0 && !ProcessAlive(watch_pid)) {
      return absl::UnavailableError(
          absl::StrCat("process ", watch_pid, " exited before writing ", path));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("timed out after ", timeout_ms, " ms waiting for ", path));
}

}  // namespace flowsched::tools
