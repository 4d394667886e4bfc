#include "tools/flowsched/process_control.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

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
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
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

absl::Status WritePidFile(const std::string& path, pid_t pid) {
  std::ofstream out(path, std::ios::trunc);
  out << pid << "\n";
  if (!out.good()) {
    return absl::UnavailableError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<pid_t> ReadPidFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("no pid file ", path));
  std::string line;
  std::getline(in, line);
  int pid = 0;
  if (!absl::SimpleAtoi(line, &pid) || pid <= 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("pid file ", path, " holds '", line, "'"));
  }
  return static_cast<pid_t>(pid);
}

bool ProcessAlive(pid_t pid) {
  // Reap it if it is our exited child, so it does not linger as a zombie.
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) == pid) return false;
  return ::kill(pid, 0) == 0;
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

absl::StatusOr<std::string> WaitForFile(const std::string& path,
                                        int timeout_ms, pid_t watch_pid) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path);
    std::string line;
    if (in && std::getline(in, line) && !line.empty()) return line;
    if (watch_pid > 0 && !ProcessAlive(watch_pid)) {
      return absl::UnavailableError(absl::StrCat(
          "process ", watch_pid, " exited before writing ", path));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("timed out after ", timeout_ms, " ms waiting for ", path));
}

}  // namespace flowsched::tools
