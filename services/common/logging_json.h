#pragma once

// The JSON log format (--log-format json): one JSON object per line,
// {"time":"<UTC, ISO 8601, milliseconds>","level":"info",
//  "service":"graph-manager","message":"..."}, time in UTC with milliseconds,
//  level as spdlog names
// it (trace, debug, info, warning, error, critical). Messages are escaped
// per RFC 8259; bytes that are not valid UTF-8 become U+FFFD, so every line
// parses whatever a message holds.

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "spdlog/formatter.h"

namespace flowsched {

// `text` as the inside of a JSON string (no surrounding quotes).
[[nodiscard]] std::string JsonEscape(std::string_view text);

// One log line, newline included.
[[nodiscard]] std::string FormatJsonLogLine(
    std::chrono::system_clock::time_point time, std::string_view level,
    std::string_view service, std::string_view message);

// An spdlog formatter writing FormatJsonLogLine's lines; the logger's name
// is the service.
[[nodiscard]] std::unique_ptr<spdlog::formatter> MakeJsonLogFormatter();

}  // namespace flowsched
