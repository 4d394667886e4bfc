#pragma once

// Where a configuration file meets the command line (CLI11). The order is
// defaults < file < flags: a flag given on the command line always wins,
// the file fills in the rest. Both directions walk config_schema.h, so no
// command lists its flags here by hand.

#include <vector>

#include "CLI/CLI.hpp"
#include "tools/flowsched/config/config.h"
#include "tools/flowsched/config/config_parser.h"

namespace flowsched::config {

// For every field that applies to `command` (common fields: to `root`)
// and whose flag exists there but was not given on the command line, feeds
// the file's value to that option as if it had been given, when it differs
// from the default. REQUIRES: `root` parsed, `command` its subcommand.
// Returns a problem per value a flag's own check refused.
std::vector<ConfigProblem> ApplyConfigToFlags(const Config& config,
                                              CLI::App& root,
                                              CLI::App& command);

// Sets on `config` every field whose flag was given on the command line of
// `root` or `command`; returns a problem per value refused.
std::vector<ConfigProblem> OverlayGivenFlags(Config& config,
                                             const CLI::App& root,
                                             const CLI::App& command);

// Adds an option to `command` for every field that is not common (common
// fields are root flags), so it accepts the flags of every service.
void AddServiceFieldFlags(CLI::App& command);

}  // namespace flowsched::config
