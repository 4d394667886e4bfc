#include "tools/flowsched/lifecycle.h"

#include <algorithm>
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

// Runs `flowsched <name> ...`; its log and pid file are named `instance`
// (default: name).
absl::StatusOr<pid_t> Start(const CommonFlags& flags, const std::string& name,
                            std::vector<std::string> extra,
                            std::string instance = "") {
  if (instance.empty()) instance = name;
  FLOWSCHED_ASSIGN_OR_RETURN(std::string self, SelfExecutable());
  std::vector<std::string> argv = {self, name};
  for (std::string& arg : ForwardedFlags(flags)) argv.push_back(std::move(arg));
  for (std::string& arg : extra) argv.push_back(std::move(arg));
  if (!flags.metrics_address.empty()) {
    argv.insert(argv.end(), {"--metrics-address", flags.metrics_address,
                             "--metrics-name", instance});
  }
  FLOWSCHED_ASSIGN_OR_RETURN(
      pid_t pid,
      SpawnDetached(argv,
                    absl::StrCat(flags.data_dir, "/logs/", instance, ".log")));
  FLOWSCHED_RETURN_IF_ERROR(WritePidFile(PidFile(flags, instance), pid));
  return pid;
}

}  // namespace

const std::vector<std::string>& ServiceNames() {
  static const std::vector<std::string> kNames = {"broker", "graph-manager",
                                                  "solver-worker"};
  return kNames;
}

std::vector<std::string> ExtraSolverWorkerNames(const CommonFlags& flags) {
  std::vector<std::string> names;
  for (int i = 2;; ++i) {
    std::string name = absl::StrCat("solver-worker-", i);
    if (!std::filesystem::exists(PidFile(flags, name))) break;
    names.push_back(std::move(name));
  }
  return names;
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
    if (options.ha) {
      args.push_back("--ha");
      // As for solver workers below: the embedded broker accepts a session
      // shorter than a real broker's 6000 ms minimum, and its coordinator
      // waits about a session for members to rejoin, so this halves the
      // takeover time there.
      if (flags.brokers.empty()) {
        args.insert(args.end(), {"--lease-session-timeout-ms", "3000"});
      }
    }
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
  const int workers =
      options.solver_workers > 0
          ? options.solver_workers
          : 1 + static_cast<int>(ExtraSolverWorkerNames(flags).size());
  for (int i = 1; i <= workers; ++i) {
    const std::string name =
        i == 1 ? "solver-worker" : absl::StrCat("solver-worker-", i);
    if (running(name)) continue;
    std::vector<std::string> args = {"--algorithm", options.algorithm};
    // Several workers on one rounds topic must all be group members.
    if (workers > 1) {
      args.push_back("--standby");
      // The embedded broker accepts short sessions (a real broker's
      // group.min.session.timeout.ms is 6000 by default): a killed worker's
      // partition moves after about twice this there.
      if (flags.brokers.empty()) {
        args.insert(args.end(), {"--session-timeout-ms", "3000"});
      }
    }
    FLOWSCHED_RETURN_IF_ERROR(
        Start(flags, "solver-worker", std::move(args), name).status());
  }
  return absl::OkStatus();
}

absl::Status StopServices(const CommonFlags& flags) {
  absl::Status result;
  // Reverse start order: consumers before the broker they talk to.
  std::vector<std::string> names = ExtraSolverWorkerNames(flags);
  std::reverse(names.begin(), names.end());
  names.insert(names.end(), ServiceNames().rbegin(), ServiceNames().rend());
  for (const std::string& name : names) {
    const std::string path = PidFile(flags, name);
    auto pid = ReadPidFile(path);
    if (!pid.ok()) continue;
    result.Update(StopProcess(*pid, 10'000));
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  return result;
}

}  // namespace flowsched::tools
