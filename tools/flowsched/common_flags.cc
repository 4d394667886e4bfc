#include "tools/flowsched/common_flags.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "services/flow/policy_spec.h"

namespace flowsched::tools {

void AddCommonFlags(CLI::App& app, CommonFlags& flags) {
  app.add_option("--brokers", flags.brokers,
                 "Kafka bootstrap servers (host:port,...); default: the "
                 "embedded broker of the data directory");
  app.add_option("--data-dir", flags.data_dir,
                 "Data directory: RocksDB state, logs, pids, bootstrap file")
      ->capture_default_str();
  app.add_option("--topic-prefix", flags.topic_prefix,
                 "Prefix of the flowsched topics")
      ->capture_default_str();
  app.add_flag("--legacy-broker", flags.legacy_broker,
               "Talk to a Kafka 0.9 broker (no API version requests, no "
               "idempotent producer)");
  app.add_option("--kafka", flags.kafka_settings,
                 "Extra librdkafka setting key=value (repeatable)");
  app.add_option("--log-level", flags.log_level,
                 "trace, debug, info, warn, error or off")
      ->capture_default_str();
  app.add_option("--log-format", flags.log_format,
                 "text, or json: one JSON object per line with time, level, "
                 "service and message")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--config", flags.config_file,
                 "YAML configuration file (deploy/flowsched.example.yaml); "
                 "flags given on the command line override it")
      ->envname("FLOWSCHED_CONFIG");
  app.add_option("--metrics-address", flags.metrics_address,
                 "Services: serve /metrics, /healthz and /readyz on "
                 "IPV4:PORT (port 0: a free one); the bound port goes to "
                 "<data-dir>/metrics/<service>.port. Default: off");
  app.add_option("--metrics-name", flags.metrics_name,
                 "Services: the name of the metrics port file (default: the "
                 "command's, e.g. graph-manager)");
}

std::string BootstrapFile(const CommonFlags& flags) {
  return flags.data_dir + "/bootstrap";
}

absl::StatusOr<bus::KafkaOptions> ResolveKafka(const CommonFlags& flags) {
  bus::KafkaOptions options;
  options.legacy_broker = flags.legacy_broker;
  for (const std::string& setting : flags.kafka_settings) {
    const size_t eq = setting.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--kafka expects key=value, got '", setting, "'"));
    }
    options.extra[setting.substr(0, eq)] = setting.substr(eq + 1);
  }
  if (!flags.brokers.empty()) {
    options.brokers = flags.brokers;
    return options;
  }
  std::ifstream in(BootstrapFile(flags));
  std::string line;
  if (!in || !std::getline(in, line) || line.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no --brokers given and no embedded broker running for data "
        "directory '",
        flags.data_dir, "' (", BootstrapFile(flags),
        " is missing); start one with `flowsched up`"));
  }
  options.brokers = line;
  return options;
}

bus::TopicNames Topics(const CommonFlags& flags) {
  return bus::TopicNames::WithPrefix(flags.topic_prefix);
}

void AddInitialPolicyOption(CLI::App& cmd, std::string& policy) {
  cmd.add_option("--policy", policy,
                 "Initial scheduling policy of a fresh data directory (a "
                 "store keeps its active one; see `flowsched policy set`): "
                 "NAME or NAME:key=value,... (`flowsched policy list`)")
      ->check(PolicySpecValidator())
      ->capture_default_str();
}

CLI::Validator PolicySpecValidator() {
  return CLI::Validator(
      [](const std::string& value) -> std::string {
        absl::StatusOr<std::string> spec = flow::CanonicalPolicySpec(value);
        return spec.ok() ? "" : std::string(spec.status().message());
      },
      "POLICY[:key=value,...]");
}

}  // namespace flowsched::tools
