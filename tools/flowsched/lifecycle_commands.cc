// `flowsched up`, `flowsched down`, `flowsched status`: start the embedded
// broker and both services in the background, stop them, report.

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "services/flow/policy_spec.h"
#include "services/graph_manager/status_report.h"
#include "tools/flowsched/commands.h"
#include "tools/flowsched/lifecycle.h"
#include "tools/flowsched/summary.h"

namespace flowsched::tools {

CommandMain AddUpCommand(CLI::App& app, CommonFlags& flags) {
  auto* cmd = app.add_subcommand(
      "up",
      "Start the embedded broker (unless --brokers is given), the graph "
      "manager and the solver worker in the background; only those not "
      "running yet, so it also restarts a service that died. The first `up` "
      "of a data directory stores its settings (--brokers, --legacy-broker, "
      "--topic-prefix, --cut-every-events, --cut-at-ticks, --policy, "
      "--algorithm, --solver-workers, --ha, --log-format) in "
      "<data-dir>/deployment; later ones reuse them and refuse "
      "contradicting flags (see --reset-deployment). Exits non-zero unless "
      "every service runs and is ready");
  auto options = std::make_shared<UpOptions>();
  auto reset = std::make_shared<bool>(false);
  AddInitialPolicyOption(*cmd, options->policy);
  cmd->add_option("--algorithm", options->algorithm, "Solver algorithm")
      ->capture_default_str();
  cmd->add_option("--cut-every-events", options->cut_every_events,
                  "Deterministic rounds every N events (see graph-manager); "
                  "0: rounds follow the clock");
  cmd->add_flag("--cut-at-ticks", options->cut_at_ticks,
                "Deterministic rounds at Tick events (see graph-manager)");
  cmd->add_option("--solver-workers", options->solver_workers,
                  "Solver workers to run (logs and pids solver-worker, "
                  "solver-worker-2, ...). With more than one, all run with "
                  "--standby: one is active, the others take over if it "
                  "fails. Default for a new data directory: 1")
      ->check(CLI::Range(1, kMaxSolverWorkers));
  cmd->add_flag("--ha", options->ha,
                "Run the graph manager with --ha: it joins the leader group "
                "with every other graph manager on these brokers and is "
                "active or standby (see `flowsched status`)");
  cmd->add_option("--start-timeout-ms", options->start_timeout_ms,
                  "How long to wait for each service to run and be ready")
      ->check(CLI::Range(1000, 600'000))
      ->capture_default_str();
  cmd->add_flag("--reset-deployment", *reset,
                "Replace the stored settings of the data directory with "
                "this command's flags (defaults for those not given); the "
                "state stays. Needs every service stopped (`flowsched "
                "down`)");
  return [&app, cmd, &flags, options, reset]() {
    // Only the flags given on this command line count as requests.
    DeploymentRequest request;
    auto given = [](const CLI::App& where, const char* name) {
      return where.count(name) > 0;
    };
    if (given(app, "--brokers")) request.brokers = flags.brokers;
    if (given(app, "--legacy-broker")) {
      request.legacy_broker = flags.legacy_broker;
    }
    if (given(app, "--topic-prefix")) request.topic_prefix = flags.topic_prefix;
    if (given(app, "--log-format")) request.log_format = flags.log_format;
    if (given(*cmd, "--cut-every-events")) {
      request.cut_every_events = options->cut_every_events;
    }
    if (given(*cmd, "--cut-at-ticks")) {
      request.cut_at_ticks = options->cut_at_ticks;
    }
    if (given(*cmd, "--policy")) {
      // Canonical, so that "quincy-qfp:xi=2" and "quincy-qfp" compare equal.
      request.initial_policy =
          flow::CanonicalPolicySpec(options->policy).value_or(options->policy);
    }
    if (given(*cmd, "--algorithm")) request.algorithm = options->algorithm;
    if (given(*cmd, "--solver-workers")) {
      request.solver_workers = options->solver_workers;
    }
    if (given(*cmd, "--ha")) request.ha = options->ha;
    absl::Status status = Up(flags, request, *reset, options->start_timeout_ms);
    if (!status.ok()) {
      std::cerr << "flowsched up: " << status.message() << "\n";
      return 1;
    }
    auto kafka = ResolveKafka(flags);
    fmt::print("flowsched is up: brokers {}, data in {}, logs in {}/logs\n",
               kafka.ok() ? kafka->brokers : "?", flags.data_dir,
               flags.data_dir);
    return 0;
  };
}

CommandMain AddDownCommand(CLI::App& app, CommonFlags& flags) {
  app.add_subcommand("down", "Stop what `flowsched up` started");
  return [&flags]() {
    absl::Status status = StopServices(flags);
    if (!status.ok()) {
      std::cerr << "flowsched down: " << status.message() << "\n";
      return 1;
    }
    fmt::print("flowsched is down ({})\n", flags.data_dir);
    return 0;
  };
}

CommandMain AddStatusCommand(CLI::App& app, CommonFlags& flags) {
  auto* cmd = app.add_subcommand(
      "status", "Print the graph manager's status from <data-dir>/status.json");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print the raw JSON");
  return [&flags, json]() {
    const std::string path = flags.data_dir + "/status.json";
    auto status = graph_manager::ReadStatusFile(path);
    if (*json) {
      if (!status.ok()) {
        std::cerr << "flowsched status: " << status.status().message() << "\n";
        return 1;
      }
      std::ifstream in(path);
      std::cout << in.rdbuf();
      return 0;
    }
    if (status.ok()) {
      PrintSummary(*status, std::cout);
    } else {
      std::cerr << "flowsched status: " << status.status().message() << "\n";
    }
    std::vector<std::string> names = ServiceNames();
    for (std::string& name : ExtraSolverWorkerNames(flags)) {
      names.push_back(std::move(name));
    }
    for (const std::string& name : names) {
      fmt::print("  {:<17} {}\n", name, DescribeService(flags, name));
    }
    return status.ok() ? 0 : 1;
  };
}

}  // namespace flowsched::tools
