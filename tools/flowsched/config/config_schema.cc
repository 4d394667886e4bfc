#include "tools/flowsched/config/config_schema.h"

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "services/core/round_solver.h"
#include "services/flow/policy_spec.h"
#include "services/flow/scheduling_policy.h"
#include "services/metrics/listen_address.h"
#include "services/solver/solver_registry.h"

namespace flowsched::config {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

std::vector<std::string> LogLevels() {
  return {"trace", "debug", "info", "warn", "error", "off"};
}

std::vector<std::string> LogFormats() { return {"text", "json"}; }

std::vector<std::string> Algorithms() {
  std::vector<std::string> names = {std::string(core::kIncrementalRounds)};
  for (std::string& name : solver::SolverNames()) {
    if (name != names.front()) names.push_back(std::move(name));
  }
  return names;
}

absl::Status CheckNotEmpty(std::string_view value) {
  if (value.empty()) return absl::InvalidArgumentError("must not be empty");
  return absl::OkStatus();
}

// Kafka topic names allow ASCII letters, digits, '.', '_' and '-'.
absl::Status CheckTopicPrefix(std::string_view value) {
  for (char c : value) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' &&
        c != '_' && c != '-') {
      return absl::InvalidArgumentError(absl::StrCat(
          "may hold only letters, digits, '.', '_' and '-' (Kafka topic "
          "names), got \"",
          std::string(value), "\""));
    }
  }
  if (value.size() > 200) {
    return absl::InvalidArgumentError("is longer than 200 characters");
  }
  return absl::OkStatus();
}

// IPV4:PORT of the metrics endpoint; empty: off.
absl::Status CheckMetricsAddress(std::string_view value) {
  if (value.empty()) return absl::OkStatus();
  return metrics::ParseListenAddress(value).status();
}

// host:port,host:port (librdkafka's bootstrap.servers); empty allowed.
absl::Status CheckBrokers(std::string_view value) {
  if (value.empty()) return absl::OkStatus();
  for (absl::string_view server : absl::StrSplit(std::string(value), ',')) {
    if (server.empty() ||
        server.find_first_of(" \t\r\n") != absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "must be host:port[,host:port...] without spaces, got \"",
          std::string(value), "\""));
    }
  }
  return absl::OkStatus();
}

std::vector<ConfigField> MakeFields() {
  using K = FieldKind;
  return {
      {.section = "common",
       .key = "brokers",
       .flag = "--brokers",
       .kind = K::kString,
       .help = "Kafka bootstrap servers host:port,...; empty: the embedded "
               "broker of the data directory",
       .ref = [](Config& c) -> FieldRef { return &c.common.brokers; },
       .check = CheckBrokers},
      {.section = "common",
       .key = "data_dir",
       .flag = "--data-dir",
       .kind = K::kString,
       .help = "RocksDB state, logs, pids, bootstrap file",
       .ref = [](Config& c) -> FieldRef { return &c.common.data_dir; },
       .check = CheckNotEmpty},
      {.section = "common",
       .key = "topic_prefix",
       .flag = "--topic-prefix",
       .kind = K::kString,
       .help = "Prefix of the flowsched topics",
       .ref = [](Config& c) -> FieldRef { return &c.common.topic_prefix; },
       .check = CheckTopicPrefix},
      {.section = "common",
       .key = "legacy_broker",
       .flag = "--legacy-broker",
       .kind = K::kBool,
       .help = "Talk to a Kafka 0.9 broker",
       .ref = [](Config& c) -> FieldRef { return &c.common.legacy_broker; }},
      {.section = "common",
       .key = "kafka",
       .flag = "--kafka",
       .kind = K::kStringMap,
       .help = "Extra librdkafka settings",
       .ref = [](Config& c) -> FieldRef { return &c.common.kafka; }},
      {.section = "common",
       .key = "log_level",
       .flag = "--log-level",
       .kind = K::kEnum,
       .help = "Log level",
       .ref = [](Config& c) -> FieldRef { return &c.common.log_level; },
       .choices = LogLevels},
      {.section = "common",
       .key = "log_format",
       .flag = "--log-format",
       .kind = K::kEnum,
       .help = "Log format: text, or json (one object a line)",
       .ref = [](Config& c) -> FieldRef { return &c.common.log_format; },
       .choices = LogFormats},
      {.section = "common",
       .key = "metrics_address",
       .flag = "--metrics-address",
       .kind = K::kString,
       .help = "IPV4:PORT of the services' /metrics, /healthz and /readyz "
               "(empty: off)",
       .ref = [](Config& c) -> FieldRef { return &c.common.metrics_address; },
       .check = CheckMetricsAddress},
      {.section = "broker",
       .key = "broker_count",
       .flag = "--broker-count",
       .commands = "broker",
       .kind = K::kInt,
       .help = "Brokers of the embedded cluster",
       .ref = [](Config& c) -> FieldRef { return &c.broker.broker_count; },
       .min = 1,
       .max = 9},
      {.section = "graph_manager",
       .key = "round_timeout_ms",
       .flag = "--round-timeout-ms",
       .commands = "graph-manager",
       .kind = K::kInt,
       .help = "Re-cut a round as a snapshot when its results take longer",
       .ref = [](Config& c) -> FieldRef {
         return &c.graph_manager.round_timeout_ms;
       },
       .min = 100,
       .max = 3'600'000},
      {.section = "graph_manager",
       .key = "gang_hold_after_ms",
       .flag = "--gang-hold-after-ms",
       .commands = "graph-manager",
       .kind = K::kInt,
       .help = "Hold free room for a gang whose oldest task waited this long "
               "(0: never)",
       .ref = [](Config& c) -> FieldRef {
         return &c.graph_manager.gang_hold_after_ms;
       },
       .min = 0,
       .max = 86'400'000},
      {.section = "graph_manager",
       .key = "cut_every_events",
       .flag = "--cut-every-events",
       .commands = "graph-manager up",
       .kind = K::kInt,
       .help = "Deterministic rounds every N events (0: rounds follow the "
               "clock)",
       .ref = [](Config& c) -> FieldRef {
         return &c.graph_manager.cut_every_events;
       },
       .min = 0,
       .max = kInt64Max},
      {.section = "graph_manager",
       .key = "cut_at_ticks",
       .flag = "--cut-at-ticks",
       .commands = "graph-manager up",
       .kind = K::kBool,
       .help = "Deterministic rounds at Tick events",
       .ref = [](Config& c) -> FieldRef {
         return &c.graph_manager.cut_at_ticks;
       }},
      {.section = "graph_manager",
       .key = "ha",
       .flag = "--ha",
       .commands = "graph-manager up",
       .kind = K::kBool,
       .help = "Active/standby graph managers through a leader lease",
       .ref = [](Config& c) -> FieldRef { return &c.graph_manager.ha; }},
      {.section = "graph_manager",
       .key = "lease_session_timeout_ms",
       .flag = "--lease-session-timeout-ms",
       .commands = "graph-manager",
       .kind = K::kInt,
       .help = "With ha: how long a silent active instance keeps the lease",
       .ref = [](Config& c) -> FieldRef {
         return &c.graph_manager.lease_session_timeout_ms;
       },
       .min = 1'000,
       .max = 300'000},
      {.section = "graph_manager",
       .key = "max_batch",
       .flag = "--max-batch",
       .commands = "graph-manager",
       .kind = K::kInt,
       .help = "Records applied per RocksDB batch",
       .ref = [](Config& c) -> FieldRef { return &c.graph_manager.max_batch; },
       .min = 1,
       .max = 1'000'000},
      {.section = "graph_manager",
       .key = "max_tasks_per_job",
       .flag = "--max-tasks-per-job",
       .commands = "graph-manager",
       .kind = K::kInt,
       .help = "Jobs with more tasks are rejected",
       .ref = [](Config& c) -> FieldRef {
         return &c.graph_manager.max_tasks_per_job;
       },
       .min = 1,
       .max = 10'000'000},
      {.section = "graph_manager",
       .key = "max_task_slots",
       .flag = "--max-task-slots",
       .commands = "graph-manager",
       .kind = K::kInt,
       .help = "Machines with more slots are rejected",
       .ref = [](Config& c) -> FieldRef {
         return &c.graph_manager.max_task_slots;
       },
       .min = 1,
       .max = 100'000},
      {.section = "solver_worker",
       .key = "algorithm",
       .flag = "--algorithm",
       .commands = "solver-worker up",
       .kind = K::kEnum,
       .help = "incremental, or one algorithm solving each round from "
               "scratch",
       .ref = [](Config& c) -> FieldRef { return &c.solver_worker.algorithm; },
       .choices = Algorithms},
      {.section = "solver_worker",
       .key = "standby",
       .flag = "--standby",
       .commands = "solver-worker",
       .kind = K::kBool,
       .help = "Active/standby solver workers through a consumer group",
       .ref = [](Config& c) -> FieldRef { return &c.solver_worker.standby; }},
      {.section = "solver_worker",
       .key = "session_timeout_ms",
       .flag = "--session-timeout-ms",
       .commands = "solver-worker",
       .kind = K::kInt,
       .help = "With standby: how long a silent active worker keeps the "
               "rounds partition",
       .ref = [](Config& c) -> FieldRef {
         return &c.solver_worker.session_timeout_ms;
       },
       .min = 1'000,
       .max = 300'000},
      {.section = "up",
       .key = "solver_workers",
       .flag = "--solver-workers",
       .commands = "up",
       .kind = K::kInt,
       .help = "Solver workers `up` runs (0: as many as the last `up` "
               "started, at least 1)",
       .ref = [](Config& c) -> FieldRef { return &c.up.solver_workers; },
       .min = 0,
       .max = 16},
      {.section = "policy",
       .key = "name",
       .flag = "--policy",
       .commands = "graph-manager up",
       .kind = K::kPolicy,
       .help = "Initial scheduling policy of a fresh data directory: NAME "
               "or NAME:key=value,... (`flowsched policy list`)",
       .ref = [](Config& c) -> FieldRef { return &c.policy.name; },
       .choices = flow::PolicyNames},
  };
}

bool ParseBool(std::string_view text, bool& out) {
  const std::string lower = absl::AsciiStrToLower(std::string(text));
  if (lower == "true") {
    out = true;
    return true;
  }
  if (lower == "false") {
    out = false;
    return true;
  }
  return false;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string ConfigField::Path() const {
  return absl::StrCat(std::string(section), ".", std::string(key));
}

bool ConfigField::AppliesTo(std::string_view command) const {
  if (IsCommon()) return true;
  for (absl::string_view name : absl::StrSplit(std::string(commands), ' ')) {
    if (std::string_view(name.data(), name.size()) == command) return true;
  }
  return false;
}

const std::vector<ConfigField>& Fields() {
  static const std::vector<ConfigField> kFields = MakeFields();
  return kFields;
}

const std::vector<std::string>& SectionNames() {
  static const std::vector<std::string> kNames = {
      "common", "broker", "graph_manager", "solver_worker", "up", "policy"};
  return kNames;
}

std::vector<std::string> SectionKeys(std::string_view section) {
  std::vector<std::string> keys;
  for (const ConfigField& field : Fields()) {
    if (field.section == section) keys.emplace_back(field.key);
  }
  if (section == "policy") keys.emplace_back("parameters");
  return keys;
}

std::string DescribeRange(const ConfigField& field) {
  if (field.max == kInt64Max) {
    return field.min == 0 ? "a non-negative integer"
                          : absl::StrCat("an integer >= ", field.min);
  }
  return absl::StrCat("an integer in [", field.min, ", ", field.max, "]");
}

namespace {

// OK if `value` is one of `choices`; otherwise why, with a likely typo's fix.
absl::Status CheckChoice(const std::string& value,
                         const std::vector<std::string>& choices) {
  if (std::find(choices.begin(), choices.end(), value) != choices.end()) {
    return absl::OkStatus();
  }
  std::string why = absl::StrCat(
      "unknown \"", value, "\" (known: ", absl::StrJoin(choices, ", "), ")");
  const std::string closest = ClosestName(value, choices);
  if (!closest.empty()) absl::StrAppend(&why, "; did you mean ", closest, "?");
  return absl::InvalidArgumentError(why);
}

}  // namespace

absl::Status SetFromText(const ConfigField& field, Config& config,
                         const std::vector<std::string>& text) {
  FieldRef ref = field.ref(config);
  if (field.kind == FieldKind::kStringMap) {
    std::map<std::string, std::string> entries;
    for (const std::string& entry : text) {
      const size_t eq = entry.find('=');
      if (eq == std::string::npos || eq == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("expects key=value, got \"", entry, "\""));
      }
      entries[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    *std::get<std::map<std::string, std::string>*>(ref) = std::move(entries);
    return absl::OkStatus();
  }
  if (text.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("expects one value, got ", text.size()));
  }
  const std::string& value = text.front();
  switch (field.kind) {
    case FieldKind::kString:
      if (field.check != nullptr) {
        absl::Status status = field.check(value);
        if (!status.ok()) return status;
      }
      *std::get<std::string*>(ref) = value;
      return absl::OkStatus();
    case FieldKind::kEnum: {
      absl::Status known = CheckChoice(value, field.choices());
      if (!known.ok()) return known;
      *std::get<std::string*>(ref) = value;
      return absl::OkStatus();
    }
    case FieldKind::kBool:
      if (!ParseBool(value, *std::get<bool*>(ref))) {
        return absl::InvalidArgumentError(
            absl::StrCat("must be true or false, got \"", value, "\""));
      }
      return absl::OkStatus();
    case FieldKind::kInt: {
      int64_t number = 0;
      if (!absl::SimpleAtoi(value, &number)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "must be ", DescribeRange(field), ", got \"", value, "\""));
      }
      if (number < field.min || number > field.max) {
        return absl::InvalidArgumentError(
            absl::StrCat("must be ", DescribeRange(field), ", got ", number));
      }
      *std::get<int64_t*>(ref) = number;
      return absl::OkStatus();
    }
    case FieldKind::kPolicy: {
      absl::Status known = CheckChoice(std::string(absl::StripAsciiWhitespace(
                                           value.substr(0, value.find(':')))),
                                       field.choices());
      if (!known.ok()) return known;
      absl::StatusOr<flow::PolicySpec> spec = flow::ParsePolicySpec(value);
      if (!spec.ok()) return spec.status();
      *std::get<std::string*>(ref) = spec->name;
      config.policy.parameters = spec->values;
      return absl::OkStatus();
    }
    case FieldKind::kStringMap:
      break;
  }
  return absl::InternalError("unhandled field kind");
}

std::vector<std::string> FlagValues(const ConfigField& field,
                                    const Config& config) {
  // The accessors take a mutable Config; the copy keeps `config` const.
  Config copy = config;
  FieldRef ref = field.ref(copy);
  switch (field.kind) {
    case FieldKind::kString:
    case FieldKind::kEnum:
      return {*std::get<std::string*>(ref)};
    case FieldKind::kPolicy:
      return {flow::FormatPolicySpec({.name = *std::get<std::string*>(ref),
                                      .values = copy.policy.parameters})};
    case FieldKind::kBool:
      return {*std::get<bool*>(ref) ? "true" : "false"};
    case FieldKind::kInt:
      return {absl::StrCat(*std::get<int64_t*>(ref))};
    case FieldKind::kStringMap: {
      std::vector<std::string> entries;
      for (const auto& [key, value] :
           *std::get<std::map<std::string, std::string>*>(ref)) {
        entries.push_back(absl::StrCat(key, "=", value));
      }
      return entries;
    }
  }
  return {};
}

std::string ClosestName(std::string_view word,
                        const std::vector<std::string>& candidates) {
  const size_t limit = std::max<size_t>(1, word.size() / 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    const size_t distance = EditDistance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

}  // namespace flowsched::config
