// flowsched: the command-line entry point for every flowsched process and
// tool. Each subcommand lives in its own file; this file only wires them.

#include <exception>
#include <iostream>
#include <map>

#include "CLI/CLI.hpp"
#include "services/metrics/listen_address.h"
#include "tools/flowsched/agent_command.h"
#include "tools/flowsched/commands.h"
#include "tools/flowsched/config_file.h"

int main(int argc, char** argv) {
  using namespace flowsched::tools;  // NOLINT(build/namespaces): main only
  CLI::App app{
      "flowsched: a flow-based cluster scheduler on a Kafka message bus.\n"
      "Events in (flowsched.events), placements out (flowsched.placements)."};
  app.require_subcommand(1);
  app.fallthrough();
  CommonFlags flags;
  AddCommonFlags(app, flags);
  const std::map<std::string, CommandMain> commands = {
      {"broker", AddBrokerCommand(app, flags)},
      {"graph-manager", AddGraphManagerCommand(app, flags)},
      {"solver-worker", AddSolverWorkerCommand(app, flags)},
      {"up", AddUpCommand(app, flags)},
      {"down", AddDownCommand(app, flags)},
      {"status", AddStatusCommand(app, flags)},
      {"submit", AddSubmitCommand(app, flags)},
      {"tail", AddTailCommand(app, flags)},
      {"generate", AddGenerateCommand(app, flags)},
      {"inspect", AddInspectCommand(app, flags)},
      {"demo", AddDemoCommand(app, flags)},
      {"solve", AddSolveCommand(app, flags)},
      {"compare", AddCompareCommand(app, flags)},
      {"simulate", AddSimulateCommand(app, flags)},
      {"gpu-replay", AddGpuReplayCommand(app, flags)},
      {"bench", AddBenchCommand(app, flags)},
      {"policy", AddPolicyCommand(app, flags)},
      {"explain", AddExplainCommand(app, flags)},
      {"config", AddConfigCommand(app, flags)},
      {"agent", AddAgentCommand(app, flags)},
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!flags.metrics_address.empty()) {
    auto address =
        flowsched::metrics::ParseListenAddress(flags.metrics_address);
    if (!address.ok()) {
      std::cerr << "flowsched: " << address.status().message() << "\n";
      return 2;
    }
  }
  try {
    for (CLI::App* sub : app.get_subcommands()) {
      if (int code = ApplyConfigFile(app, *sub, flags); code != 0) return code;
      return commands.at(sub->get_name())();
    }
  } catch (const std::exception& e) {
    std::cerr << "flowsched: " << e.what() << "\n";
    return 1;
  }
  return 2;
}
