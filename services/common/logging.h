#pragma once

// Logging setup shared by every flowsched process: spdlog to stderr with the
// service name in every line.

#include <string_view>

#include "spdlog/spdlog.h"

namespace flowsched {

// Names the process in log lines and sets the level ("trace" .. "off").
// Unknown levels fall back to "info".
void InitLogging(std::string_view service, std::string_view level);

}  // namespace flowsched
