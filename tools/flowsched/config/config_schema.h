#pragma once

// The one table that ties each configuration field to its YAML path, its
// command-line flag, the commands that have that flag, its type and its
// limits. The parser, the emitter, `flowsched config show` and the flag
// overlay all walk this table, so a new flag is one row here plus its
// member in Config.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "tools/flowsched/config/config.h"

namespace flowsched::config {

enum class FieldKind {
  kString,     // any string; `check` may restrict it
  kEnum,       // one of `choices()`
  kBool,       // true or false
  kInt,        // an integer in [min, max]
  kStringMap,  // YAML: a mapping of strings; flag: repeated key=value
  // A policy (flow::ParsePolicySpec). YAML: its name, the parameters under
  // `policy.parameters`; flag: NAME[:key=value,...], both parts at once.
  kPolicy,
};

using FieldRef = std::variant<std::string*, bool*, int64_t*,
                              std::map<std::string, std::string>*>;

struct ConfigField {
  std::string_view section;  // "graph_manager"
  std::string_view key;      // "cut_every_events"
  std::string_view flag;     // "--cut-every-events"
  // Space-separated subcommands that have `flag`; empty: a root flag that
  // every command shares (the "common" section).
  std::string_view commands;
  FieldKind kind;
  std::string_view help;
  FieldRef (*ref)(Config&);
  int64_t min = 0;  // kInt
  int64_t max = 0;
  std::vector<std::string> (*choices)() = nullptr;  // kEnum
  // kString: OK, or InvalidArgument saying why the value is refused.
  absl::Status (*check)(std::string_view value) = nullptr;

  [[nodiscard]] std::string Path() const;  // "graph_manager.cut_every_events"
  [[nodiscard]] bool IsCommon() const { return commands.empty(); }
  [[nodiscard]] bool AppliesTo(std::string_view command) const;
};

// Every field, sections in the order of SectionNames().
const std::vector<ConfigField>& Fields();
// "common", "broker", "graph_manager", "solver_worker", "up", "policy".
const std::vector<std::string>& SectionNames();
// Keys of `section` (fields, and "parameters" for policy).
std::vector<std::string> SectionKeys(std::string_view section);

// Sets `field` in `config` from its text form (a YAML scalar or a flag
// value; kStringMap: one "key=value" per entry, replacing the map).
// InvalidArgument saying why (without the path) when the text is refused.
absl::Status SetFromText(const ConfigField& field, Config& config,
                         const std::vector<std::string>& text);
// The field's value as flag values (kBool "true"/"false"; kStringMap one
// "key=value" per entry, possibly none).
std::vector<std::string> FlagValues(const ConfigField& field,
                                    const Config& config);
// What an integer field accepts: "a non-negative integer", "an integer in
// [100, 3600000]".
std::string DescribeRange(const ConfigField& field);

// The candidate closest to `word` by edit distance when it is close enough
// to be a likely typo (at most a third of its length, at least 1), or "".
std::string ClosestName(std::string_view word,
                        const std::vector<std::string>& candidates);

}  // namespace flowsched::config
