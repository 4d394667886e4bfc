#pragma once

// Reads a flowsched YAML configuration file into a Config (defaults for
// everything the file leaves out) and reports every problem at once: each
// with the field's YAML path, why it is refused and its line.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/flowsched/config/config.h"

namespace flowsched::config {

struct ConfigProblem {
  std::string path;  // "graph_manager.max_batch", "(yaml)", "(top level)"
  std::string why;
  int line = 0;  // 1-based; 0 when unknown (a flag, the whole file)

  // "path: why (line N)".
  [[nodiscard]] std::string ToString() const;
};

// Parses `yaml` over the defaults into `config` (may be null) and returns
// every problem: YAML syntax errors (with line and column), a top level
// that is not a mapping, unknown sections, fields and policy parameters
// (with a likely intended name), duplicate keys, wrong types, out-of-range
// numbers, unknown enum values. An empty file is all defaults. Where a
// field is refused `config` keeps its default.
std::vector<ConfigProblem> CheckConfig(std::string_view yaml,
                                       Config* config = nullptr);

// The Config, or InvalidArgument listing every problem, one per line.
absl::StatusOr<Config> ParseConfig(std::string_view yaml);

// The text of `path`: NotFound when it cannot be read, InvalidArgument for
// a directory.
absl::StatusOr<std::string> ReadConfigFile(const std::string& path);

// Joins problems one per line, each prefixed with `prefix`.
std::string FormatProblems(const std::vector<ConfigProblem>& problems,
                           std::string_view prefix = "");

}  // namespace flowsched::config
