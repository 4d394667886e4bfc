#pragma once

// Connection settings shared by every Kafka client in flowsched, and the one
// place that turns them into a librdkafka configuration.

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// librdkafka's opaque handle types; forward-declared so that users of the
// bus headers do not pull in rdkafka.h.
struct rd_kafka_conf_s;
struct rd_kafka_s;

namespace flowsched::bus {

struct KafkaOptions {
  // Comma-separated host:port list (bootstrap.servers).
  std::string brokers;
  // Talk to a Kafka 0.9 broker: api.version.request=false,
  // broker.version.fallback=0.9.0.1 and no idempotent producer.
  bool legacy_broker = false;
  std::string client_id = "flowsched";
  // Raw librdkafka settings, applied last so they override everything.
  std::map<std::string, std::string> extra;
};

struct KafkaConfDeleter {
  void operator()(rd_kafka_conf_s* conf) const;
};
using KafkaConfPtr = std::unique_ptr<rd_kafka_conf_s, KafkaConfDeleter>;

struct KafkaHandleDeleter {
  void operator()(rd_kafka_s* rk) const;
};
using KafkaHandlePtr = std::unique_ptr<rd_kafka_s, KafkaHandleDeleter>;

// Builds a librdkafka configuration. Layers, later wins: bootstrap.servers
// and client.id, then `role_defaults` (what a producer or consumer wants),
// then the legacy-broker settings, then `options.extra`. Routes librdkafka's
// logs to spdlog. Returns InvalidArgument naming the key and value when
// librdkafka rejects a setting. An empty `options.brokers` is allowed here
// (the embedded broker's own handle has none); clients check it themselves.
absl::StatusOr<KafkaConfPtr> BuildKafkaConfig(
    const KafkaOptions& options,
    const std::vector<std::pair<std::string, std::string>>& role_defaults = {});

// Reads one setting back from a configuration (for tests and logging).
absl::StatusOr<std::string> GetKafkaConfigValue(const rd_kafka_conf_s& conf,
                                                std::string_view key);

// Maps a librdkafka error code (rd_kafka_resp_err_t) to an absl::Status:
// unknown topic/partition -> NotFound, bad argument -> InvalidArgument,
// fatal -> Internal, everything else (timeouts, transport, leader moves)
// -> Unavailable, since callers may retry those.
absl::Status KafkaErrorToStatus(int err, std::string_view context);

}  // namespace flowsched::bus
