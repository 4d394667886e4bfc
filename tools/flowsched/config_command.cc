// `flowsched config check FILE`, `flowsched config show`: validate a
// configuration file, print the effective configuration.

#include <iostream>
#include <memory>
#include <string>

#include "tools/flowsched/commands.h"
#include "tools/flowsched/config/config_emitter.h"
#include "tools/flowsched/config/config_flags.h"
#include "tools/flowsched/config/config_parser.h"

namespace flowsched::tools {

CommandMain AddConfigCommand(CLI::App& app, CommonFlags& flags) {
  auto* cmd = app.add_subcommand(
      "config", "Check a YAML configuration file, or show the effective one");
  cmd->require_subcommand(1);
  auto* check = cmd->add_subcommand(
      "check",
      "Print every problem of FILE (path: why), exit 1 if any; else 'ok'");
  auto file = std::make_shared<std::string>();
  check->add_option("FILE", *file, "The YAML configuration file")->required();
  auto* show = cmd->add_subcommand(
      "show",
      "Print the effective configuration as YAML: defaults, then --config "
      "FILE, then the flags given (any service's flags are accepted)");
  config::AddServiceFieldFlags(*show);
  return [&app, &flags, check, show, file]() {
    if (check->parsed()) {
      auto text = config::ReadConfigFile(*file);
      if (!text.ok()) {
        std::cout << text.status().message() << "\n";
        return 1;
      }
      const auto problems = config::CheckConfig(*text);
      if (!problems.empty()) {
        std::cout << config::FormatProblems(problems) << "\n";
        return 1;
      }
      std::cout << "ok\n";
      return 0;
    }
    config::Config config;
    std::vector<config::ConfigProblem> problems;
    if (!flags.config_file.empty()) {
      auto text = config::ReadConfigFile(flags.config_file);
      if (!text.ok()) {
        std::cerr << "flowsched config show: " << text.status().message()
                  << "\n";
        return 1;
      }
      problems = config::CheckConfig(*text, &config);
    }
    for (auto& problem : config::OverlayGivenFlags(config, app, *show)) {
      problems.push_back(std::move(problem));
    }
    if (!problems.empty()) {
      std::cerr << config::FormatProblems(problems) << "\n";
      return 1;
    }
    std::cout << config::EmitConfig(config);
    return 0;
  };
}

}  // namespace flowsched::tools
