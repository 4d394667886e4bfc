// `flowsched up`, `flowsched down`, `flowsched status`: start the embedded
// broker and both services in the background, stop them, report.

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "fmt/format.h"
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
      "running yet, so it also restarts a service that died");
  auto options = std::make_shared<UpOptions>();
  cmd->add_option("--policy", options->policy,
                  "Initial scheduling policy of a fresh data directory (a "
                  "store keeps its active one; see `flowsched policy set`)")
      ->capture_default_str();
  cmd->add_option("--algorithm", options->algorithm, "Solver algorithm")
      ->capture_default_str();
  cmd->add_option("--cut-every-events", options->cut_every_events,
                  "Deterministic rounds every N events (see graph-manager)");
  cmd->add_flag("--cut-at-ticks", options->cut_at_ticks,
                "Deterministic rounds at Tick events (see graph-manager)");
  cmd->add_option("--solver-workers", options->solver_workers,
                  "Solver workers to run (logs and pids solver-worker, "
                  "solver-worker-2, ...). With more than one, all run with "
                  "--standby: one is active, the others take over if it "
                  "fails. Default: as many as the last `up` started, at "
                  "least 1")
      ->check(CLI::Range(1, 16));
  cmd->add_flag("--ha", options->ha,
                "Run the graph manager with --ha: it joins the leader group "
                "with every other graph manager on these brokers and is "
                "active or standby (see `flowsched status`)");
  return [&flags, options]() {
    absl::Status status = StartServices(flags, *options);
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
    if (!status.ok()) {
      std::cerr << "flowsched status: " << status.status().message() << "\n";
      return 1;
    }
    if (*json) {
      std::ifstream in(path);
      std::cout << in.rdbuf();
    } else {
      PrintSummary(*status, std::cout);
      for (const std::string& name : ServiceNames()) {
        fmt::print("  {:<17} {}\n", name, DescribeService(flags, name));
      }
      for (const std::string& name : ExtraSolverWorkerNames(flags)) {
        fmt::print("  {:<17} {}\n", name, DescribeService(flags, name));
      }
    }
    return 0;
  };
}

}  // namespace flowsched::tools
