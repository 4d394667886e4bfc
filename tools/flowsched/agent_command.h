#pragma once

// `flowsched agent --machine M [--command CMD]`: a reference node agent on
// the C++ client's PlacementSubscriber (agent_command.cc).

#include "tools/flowsched/commands.h"

namespace flowsched::tools {

CommandMain AddAgentCommand(CLI::App& app, CommonFlags& flags);

}  // namespace flowsched::tools
