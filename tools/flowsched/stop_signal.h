#pragma once

// SIGTERM and SIGINT set a flag that service loops poll, so every process
// stops cleanly: the broker removes its bootstrap file, services flush.

#include <atomic>

namespace flowsched::tools {

// Installs the handlers once and returns the flag they set.
const std::atomic<bool>& InstallStopHandlers();

}  // namespace flowsched::tools
