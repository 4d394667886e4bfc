#include "tools/flowsched/lifecycle.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"
#include "tools/flowsched/process_control.h"

namespace flowsched::tools {
namespace {

std::string PidFile(const CommonFlags& flags, const std::string& name) {
  return absl::StrCat(flags.data_dir, "/pids/", name, ".pid");
}

// The flags a child needs to reach the same brokers and topics.
std::vector<std::string> ForwardedFlags(const CommonFlags& flags) {
  std::vector<std::string> args = {"--data-dir", flags.data_dir,
                                   "--topic-prefix", flags.topic_prefix,
                                   "--log-level", flags.log_level};
  if (!flags.brokers.empty()) {
    args.insert(args.end(), {"--brokers", flags.brokers});
  }
  if (flags.legacy_broker) args.push_back("--legacy-broker");
  for (const std::string& setting : flags.kafka_settings) {
    args.insert(args.end(), {"--kafka", setting});
  }
  return args;
}

absl::StatusOr<pid_t> Start(const CommonFlags& flags, const std::string& name,
                            std::vector<std::string> extra) {
  FLOWSCHED_ASSIGN_OR_RETURN(std::string self, SelfExecutable());
  std::vector<std::string> argv = {self, name};
  for (std::string& arg : ForwardedFlags(flags)) argv.push_back(std::move(arg));
  for (std::string& arg : extra) argv.push_back(std::move(arg));
  FLOWSCHED_ASSIGN_OR_RETURN(
      pid_t pid,
      SpawnDetached(argv, absl::StrCat(flags.data_dir, "/logs/", name, ".log")));
  FLOWSCHED_RETURN_IF_ERROR(WritePidFile(PidFile(flags, name), pid));
  return pid;
}

}  // namespace

const std::vector<std::string>& ServiceNames() {
  static const std::vector<std::string> kNames = {"broker", "graph-manager",
                                                  "solver-worker"};
  return kNames;
}

std::string DescribeService(const CommonFlags& flags, const std::string& name) {
  auto pid = ReadPidFile(PidFile(flags, name));
  if (!pid.ok()) return "not running";
  return ProcessAlive(*pid) ? absl::StrCat("running (pid ", *pid, ")")
                            : absl::StrCat("stopped (stale pid ", *pid, ")");
}

absl::Status StartServices(const CommonFlags& flags, const UpOptions& options) {
  auto running = [&](const std::string& name) {
    auto pid = ReadPidFile(PidFile(flags, name));
    return pid.ok() && ProcessAlive(*pid);
  };
  std::error_code ec;
  for (const char* sub : {"/logs", "/pids"}) {
    std::filesystem::create_directories(flags.data_dir + sub, ec);
    if (ec) {
      return absl::UnavailableError(absl::StrCat(
          "cannot create ", flags.data_dir, sub, ": ", ec.message()));
    }
  }
  if (flags.brokers.empty() && !running("broker")) {
    std::filesystem::remove(BootstrapFile(flags), ec);
    FLOWSCHED_ASSIGN_OR_RETURN(pid_t broker, Start(flags, "broker", {}));
    auto bootstrap =
        WaitForFile(BootstrapFile(flags), options.start_timeout_ms, broker);
    if (!bootstrap.ok()) {
      return absl::Status(bootstrap.status().code(),
                          absl::StrCat("embedded broker did not start (see ",
                                       flags.data_dir, "/logs/broker.log): ",
                                       bootstrap.status().message()));
    }
  }
  if (!running("graph-manager")) {
    const std::string status_file = flags.data_dir + "/status.json";
    std::filesystem::remove(status_file, ec);
    std::vector<std::string> args = {"--policy", options.policy};
    if (options.cut_every_events > 0) {
      args.insert(args.end(), {"--cut-every-events",
                               std::to_string(options.cut_every_events)});
    }
    if (options.cut_at_ticks) args.push_back("--cut-at-ticks");
    if (options.ha) args.push_back("--ha");
    FLOWSCHED_ASSIGN_OR_RETURN(pid_t manager,
                               Start(flags, "graph-manager", std::move(args)));
    auto ready = WaitForFile(status_file, options.start_timeout_ms, manager);
    if (!ready.ok()) {
      return absl::Status(ready.status().code(),
                          absl::StrCat("graph manager did not start (see ",
                                       flags.data_dir,
                                       "/logs/graph-manager.log): ",
                                       ready.status().message()));
    }
  }
  if (!running("solver-worker")) {
    FLOWSCHED_ASSIGN_OR_RETURN(
        pid_t worker,
        Start(flags, "solver-worker", {"--algorithm", options.algorithm}));
    (void)worker;
  }
  return absl::OkStatus();
}

absl::Status StopServices(const CommonFlags& flags) {
  absl::Status result;
  // Reverse start order: consumers before the broker they talk to.
  for (auto it = ServiceNames().rbegin(); it != ServiceNames().rend(); ++it) {
    const std::string path = PidFile(flags, *it);
    auto pid = ReadPidFile(path);
    if (!pid.ok()) continue;
    result.Update(StopProcess(*pid, 10'000));
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  return result;
}

}  // namespace flowsched::tools
