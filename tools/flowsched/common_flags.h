#pragma once

// Flags every flowsched command shares, and how they resolve to a Kafka
// connection: --brokers wins; otherwise the bootstrap file that the
// embedded broker started by `flowsched up` wrote into the data directory.

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "services/bus/kafka_options.h"
#include "services/bus/topics.h"

namespace flowsched::tools {

struct CommonFlags {
  std::string brokers;
  std::string data_dir = "flowsched-data";
  std::string topic_prefix = "flowsched.";
  bool legacy_broker = false;
  std::vector<std::string> kafka_settings;  // key=value
  std::string log_level = "info";
  std::string log_format = "text";  // "text" or "json" (one object a line)
  // --config (or $FLOWSCHED_CONFIG): a YAML file under these flags
  // (tools/flowsched/config_file.h).
  std::string config_file;
  // Services only: IPV4:PORT of the /metrics, /healthz, /readyz endpoint
  // (empty: none), and the name of its port file (empty: the command's).
  std::string metrics_address;
  std::string metrics_name;
};

void AddCommonFlags(CLI::App& app, CommonFlags& flags);

[[nodiscard]] std::string BootstrapFile(const CommonFlags& flags);
// InvalidArgument for a malformed --kafka setting; NotFound when neither
// --brokers nor a bootstrap file in the data directory names the brokers.
absl::StatusOr<bus::KafkaOptions> ResolveKafka(const CommonFlags& flags);
[[nodiscard]] bus::TopicNames Topics(const CommonFlags& flags);

// Refuses a --policy value flow::ParsePolicySpec refuses, with its reason.
[[nodiscard]] CLI::Validator PolicySpecValidator();

// `--policy`, the initial policy of a fresh data directory, checked by
// PolicySpecValidator (the graph manager's and `up`'s flag).
void AddInitialPolicyOption(CLI::App& cmd, std::string& policy);

}  // namespace flowsched::tools
