#pragma once

// One function per `flowsched` subcommand; each registers its flags on the
// CLI11 app and returns the callback that runs it (exit code).

#include <functional>

#include "CLI/CLI.hpp"
#include "tools/flowsched/common_flags.h"

namespace flowsched::tools {

using CommandMain = std::function<int()>;

CommandMain AddBrokerCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddGraphManagerCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddSolverWorkerCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddUpCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddDownCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddStatusCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddSubmitCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddTailCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddGenerateCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddInspectCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddDemoCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddSolveCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddCompareCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddSimulateCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddGpuReplayCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddBenchCommand(CLI::App& app, CommonFlags& flags);
// `bench e2e`, added to the `bench` subcommand by AddBenchCommand (both the
// LEMON build and its stub): the callback to run when `app` was parsed.
struct BenchSubcommand {
  CLI::App* app = nullptr;
  CommandMain main;
};
BenchSubcommand AddBenchE2eCommand(CLI::App& bench, CommonFlags& flags,
                                   CLI::App& root);
CommandMain AddPolicyCommand(CLI::App& app, CommonFlags& flags);
CommandMain AddExplainCommand(CLI::App& app, CommonFlags& flags);
// `config check FILE`, `config show`.
CommandMain AddConfigCommand(CLI::App& app, CommonFlags& flags);

}  // namespace flowsched::tools
