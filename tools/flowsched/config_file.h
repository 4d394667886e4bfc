#pragma once

// Applies the --config file to the command being run: checks the whole
// file, then gives each flag of that command that the command line left
// out the file's value (defaults < file < flags).

#include "CLI/CLI.hpp"
#include "tools/flowsched/common_flags.h"

namespace flowsched::tools {

// REQUIRES: `root` parsed and `command` its selected subcommand. Returns 0
// when there is nothing to apply or it was applied; 2 after printing every
// problem of the file to stderr (unreadable, invalid, refused by a flag).
// `config` itself reads the file on its own terms and is skipped. `up`
// exports the file's absolute path as FLOWSCHED_CONFIG so that the
// services it starts read it too.
[[nodiscard]] int ApplyConfigFile(CLI::App& root, CLI::App& command,
                                  const CommonFlags& flags);

}  // namespace flowsched::tools
