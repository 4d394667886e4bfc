#include "tools/flowsched/config_file.h"

#include <stdlib.h>

#include <filesystem>
#include <iostream>

#include "tools/flowsched/config/config_flags.h"
#include "tools/flowsched/config/config_parser.h"

namespace flowsched::tools {

int ApplyConfigFile(CLI::App& root, CLI::App& command,
                    const CommonFlags& flags) {
  if (flags.config_file.empty() || command.get_name() == "config") return 0;
  const std::string prefix = "flowsched: " + flags.config_file + ": ";
  auto text = config::ReadConfigFile(flags.config_file);
  if (!text.ok()) {
    std::cerr << "flowsched: " << text.status().message() << "\n";
    return 2;
  }
  config::Config config;
  std::vector<config::ConfigProblem> problems =
      config::CheckConfig(*text, &config);
  if (problems.empty()) {
    problems = config::ApplyConfigToFlags(config, root, command);
  }
  if (!problems.empty()) {
    std::cerr << config::FormatProblems(problems, prefix) << "\n";
    return 2;
  }
  if (command.get_name() == "up") {
    std::error_code ec;
    const std::filesystem::path path =
        std::filesystem::absolute(flags.config_file, ec);
    ::setenv("FLOWSCHED_CONFIG", ec ? flags.config_file.c_str() : path.c_str(),
             1);
  }
  return 0;
}

}  // namespace flowsched::tools
