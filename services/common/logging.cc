#include "services/common/logging.h"

#include <memory>
#include <string>

#include "services/common/logging_json.h"
#include "spdlog/sinks/stdout_color_sinks.h"

namespace flowsched {

void InitLogging(std::string_view service, std::string_view level,
                 std::string_view format) {
  auto logger = spdlog::stderr_color_mt(std::string(service));
  if (format == "json") {
    logger->set_formatter(MakeJsonLogFormatter());
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ [%n] %v");
  }
  auto parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") {
    parsed = spdlog::level::info;
  }
  logger->set_level(parsed);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace flowsched
