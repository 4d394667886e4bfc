#include "tools/flowsched/lifecycle.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "services/common/status_macros.h"
#include "tools/flowsched/ready_marker.h"

namespace flowsched::tools {
namespace {

std::string PidFile(const CommonFlags& flags, const std::string& name) {
  return absl::StrCat(flags.data_dir, "/pids/", name, ".pid");
}

std::string LogFile(const CommonFlags& flags, const std::string& name) {
  return absl::StrCat(flags.data_dir, "/logs/", name, ".log");
}

// "solver-worker-2" runs `flowsched solver-worker`.
std::string Subcommand(const std::string& name) {
  absl::string_view sub = name;
  if (absl::ConsumePrefix(&sub, "solver-worker-")) return "solver-worker";
  return name;
}

// The flags a child needs to reach the same brokers and topics.
std::vector<std::string> ForwardedFlags(const CommonFlags& flags) {
  std::vector<std::string> args = {
      "--data-dir",  flags.data_dir,  "--topic-prefix", flags.topic_prefix,
      "--log-level", flags.log_level, "--log-format",   flags.log_format};
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
  // The marker of the process this one replaces.
  if (auto old = ReadPidRecord(PidFile(flags, instance)); old.ok()) {
    RemoveReadyMarker(flags.data_dir, old->pid);
  }
  FLOWSCHED_ASSIGN_OR_RETURN(std::string self, SelfExecutable());
  std::vector<std::string> argv = {self, name};
  for (std::string& arg : ForwardedFlags(flags)) argv.push_back(std::move(arg));
  for (std::string& arg : extra) argv.push_back(std::move(arg));
  if (!flags.metrics_address.empty()) {
    argv.insert(argv.end(), {"--metrics-address", flags.metrics_address,
                             "--metrics-name", instance});
  }
  FLOWSCHED_ASSIGN_OR_RETURN(pid_t pid,
                             SpawnDetached(argv, LogFile(flags, instance)));
  FLOWSCHED_RETURN_IF_ERROR(WritePidFile(PidFile(flags, instance), pid));
  return pid;
}

// Every instance the deployment runs.
std::vector<std::string> InstanceNames(const CommonFlags& flags,
                                       int solver_workers) {
  std::vector<std::string> names;
  if (flags.brokers.empty()) names.emplace_back("broker");
  names.emplace_back("graph-manager");
  for (int i = 1; i <= solver_workers; ++i) {
    names.push_back(i == 1 ? "solver-worker"
                           : absl::StrCat("solver-worker-", i));
  }
  return names;
}

// Polls until every instance runs and is ready. The error names each one
// that is not, with its log.
absl::Status WaitUntilReady(const CommonFlags& flags,
                            const std::vector<std::string>& names,
                            int timeout_ms) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    std::vector<std::string> problems;
    bool any_dead = false;
    for (const std::string& name : names) {
      ServiceState state = CheckService(flags, name);
      if (state.ready) continue;
      any_dead |= state.process != ProcessCheck::kRunning;
      problems.push_back(absl::StrCat(name, " is ",
                                      DescribeService(flags, name), " (see ",
                                      LogFile(flags, name), ")"));
    }
    if (problems.empty()) return absl::OkStatus();
    // A dead service does not come back by waiting.
    if (any_dead || std::chrono::steady_clock::now() >= deadline) {
      const std::string message = absl::StrJoin(problems, "; ");
      return any_dead ? absl::UnavailableError(message)
                      : absl::DeadlineExceededError(absl::StrCat(
                            message, " after ", timeout_ms, " ms"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
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

ServiceState CheckService(const CommonFlags& flags, const std::string& name) {
  ServiceState state;
  state.name = name;
  auto record = ReadPidRecord(PidFile(flags, name));
  if (!record.ok()) return state;
  state.pid = *record;
  state.process = CheckProcess(*record, {.subcommand = Subcommand(name)});
  if (state.process != ProcessCheck::kRunning) return state;
  if (name == "broker") {
    std::ifstream in(BootstrapFile(flags));
    std::string line;
    state.ready = in && std::getline(in, line) && !line.empty();
  } else {
    state.ready = IsReady(flags.data_dir, Subcommand(name), *record);
  }
  return state;
}

std::string DescribeService(const CommonFlags& flags, const std::string& name) {
  const ServiceState state = CheckService(flags, name);
  if (!state.pid.has_value()) return "not running";
  if (state.process != ProcessCheck::kRunning) {
    return absl::StrCat("not running (pid ", state.pid->pid, " ",
                        ProcessCheckName(state.process), ")");
  }
  return absl::StrCat("running (pid ", state.pid->pid, "), ",
                      state.ready ? "ready" : "not ready");
}

std::vector<ServiceState> RunningServices(const CommonFlags& flags) {
  std::vector<std::string> names = ServiceNames();
  for (std::string& name : ExtraSolverWorkerNames(flags)) {
    names.push_back(std::move(name));
  }
  std::vector<ServiceState> running;
  for (const std::string& name : names) {
    ServiceState state = CheckService(flags, name);
    if (state.process == ProcessCheck::kRunning) {
      running.push_back(std::move(state));
    }
  }
  return running;
}

absl::Status StartServices(const CommonFlags& flags, const UpOptions& options) {
  auto running = [&](const std::string& name) {
    return CheckService(flags, name).process == ProcessCheck::kRunning;
  };
  std::error_code ec;
  for (const char* sub : {"/logs", "/pids", "/ready"}) {
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
                                       LogFile(flags, "broker"),
                                       "): ", bootstrap.status().message()));
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
                                       LogFile(flags, "graph-manager"),
                                       "): ", ready.status().message()));
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
  return WaitUntilReady(flags, InstanceNames(flags, workers),
                        options.start_timeout_ms);
}

absl::Status Up(CommonFlags& flags, const DeploymentRequest& request,
                bool reset_deployment, int start_timeout_ms) {
  std::error_code ec;
  std::filesystem::create_directories(flags.data_dir, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot create ", flags.data_dir, ": ", ec.message()));
  }
  FLOWSCHED_ASSIGN_OR_RETURN(std::optional<Deployment> stored,
                             ReadDeploymentFile(flags.data_dir));
  if (reset_deployment && stored.has_value()) {
    const std::vector<ServiceState> running = RunningServices(flags);
    if (!running.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--reset-deployment: ", running.front().name,
                       " still runs with the stored "
                       "settings; stop everything first with `flowsched down "
                       "--data-dir ",
                       flags.data_dir, "`"));
    }
    stored.reset();
  }
  DeploymentRequest effective = request;
  if (!stored.has_value() && !effective.solver_workers.has_value()) {
    // A data directory of a flowsched without deployment files: as many
    // workers as its last `up` started.
    effective.solver_workers =
        1 + static_cast<int>(ExtraSolverWorkerNames(flags).size());
  }
  FLOWSCHED_ASSIGN_OR_RETURN(
      Deployment deployment,
      ResolveDeployment(stored, effective, flags.data_dir));
  if (!stored.has_value() || !(*stored == deployment)) {
    FLOWSCHED_RETURN_IF_ERROR(WriteDeploymentFile(flags.data_dir, deployment));
  }
  flags.brokers = deployment.brokers;
  flags.legacy_broker = deployment.legacy_broker;
  flags.topic_prefix = deployment.topic_prefix;
  flags.log_format = deployment.log_format;
  UpOptions options;
  options.policy = deployment.initial_policy;
  options.algorithm = deployment.algorithm;
  options.cut_every_events = deployment.cut_every_events;
  options.cut_at_ticks = deployment.cut_at_ticks;
  options.solver_workers = deployment.solver_workers;
  options.ha = deployment.ha;
  options.start_timeout_ms = start_timeout_ms;
  return StartServices(flags, options);
}

absl::Status StopServices(const CommonFlags& flags) {
  absl::Status result;
  // Reverse start order: consumers before the broker they talk to.
  std::vector<std::string> names = ExtraSolverWorkerNames(flags);
  std::reverse(names.begin(), names.end());
  names.insert(names.end(), ServiceNames().rbegin(), ServiceNames().rend());
  for (const std::string& name : names) {
    const std::string path = PidFile(flags, name);
    const ServiceState state = CheckService(flags, name);
    if (!state.pid.has_value()) continue;
    // A pid reused by another process is not ours to stop.
    if (state.process == ProcessCheck::kRunning) {
      result.Update(StopProcess(state.pid->pid, 10'000));
    }
    RemoveReadyMarker(flags.data_dir, state.pid->pid);
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  return result;
}

}  // namespace flowsched::tools
