#pragma once

// Writes a Config as the YAML that CheckConfig reads back to the same
// Config: every section and field in the order of config_schema.h.

#include <string>

#include "tools/flowsched/config/config.h"

namespace flowsched::config {

std::string EmitConfig(const Config& config);

}  // namespace flowsched::config
