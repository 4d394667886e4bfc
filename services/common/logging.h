#pragma once

// Logging setup shared by every flowsched process: spdlog to stderr with the
// service name in every line, as text or as JSON lines (logging_json.h).

#include <string_view>

#include "spdlog/spdlog.h"

namespace flowsched {

// Names the process in log lines and sets the level ("trace" .. "off") and
// the format: "text" (the default) or "json" (one object per line: time,
// level, service, message). Unknown levels fall back to "info", unknown
// formats to "text" (the CLI validates both flags).
void InitLogging(std::string_view service, std::string_view level,
                 std::string_view format = "text");

}  // namespace flowsched
