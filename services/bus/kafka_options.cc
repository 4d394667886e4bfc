#include "services/bus/kafka_options.h"

#include <librdkafka/rdkafka.h>

#include <array>

#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace flowsched::bus {
namespace {

// librdkafka logs from its own threads with syslog levels; forward them to
// spdlog so that every process has one log stream.
void LogToSpdlog(const rd_kafka_t* rk, int level, const char* facility,
                 const char* message) {
  const char* name = rk != nullptr ? rd_kafka_name(rk) : "rdkafka";
  spdlog::level::level_enum spd_level = spdlog::level::debug;
  if (level <= 3) {
    spd_level = spdlog::level::err;
  } else if (level == 4) {
    spd_level = spdlog::level::warn;
  } else if (level <= 6) {
    spd_level = spdlog::level::info;
  }
  spdlog::log(spd_level, "[{}] {}: {}", name, facility, message);
}

absl::Status Set(rd_kafka_conf_t* conf, const std::string& key,
                 const std::string& value) {
  std::array<char, 512> errstr{};
  if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), errstr.data(),
                        errstr.size()) != RD_KAFKA_CONF_OK) {
    return absl::InvalidArgumentError(fmt::format(
        "librdkafka rejected setting {}={}: {}", key, value, errstr.data()));
  }
  return absl::OkStatus();
}

}  // namespace

void KafkaConfDeleter::operator()(rd_kafka_conf_s* conf) const {
  rd_kafka_conf_destroy(conf);
}

void KafkaHandleDeleter::operator()(rd_kafka_s* rk) const {
  rd_kafka_destroy(rk);
}

absl::StatusOr<KafkaConfPtr> BuildKafkaConfig(
    const KafkaOptions& options,
    const std::vector<std::pair<std::string, std::string>>& role_defaults) {
  KafkaConfPtr conf(rd_kafka_conf_new());
  rd_kafka_conf_set_log_cb(conf.get(), &LogToSpdlog);

  std::vector<std::pair<std::string, std::string>> settings;
  if (!options.brokers.empty()) {
    settings.emplace_back("bootstrap.servers", options.brokers);
  }
  if (!options.client_id.empty()) {
    settings.emplace_back("client.id", options.client_id);
  }
  // Scheduler traffic is small request/response exchanges (a round, its
  // decisions), where Nagle's algorithm holds a short write back until the
  // previous one is acknowledged: in bench e2e a solver worker's Flush of a
  // round's decisions then took ~40 ms more in about half the runs (14-15
  // rounds/s instead of 23-27). Role defaults and extras may override it.
  settings.emplace_back("socket.nagle.disable", "true");
  settings.insert(settings.end(), role_defaults.begin(), role_defaults.end());
  if (options.legacy_broker) {
    // Kafka 0.9 predates ApiVersionRequest (0.10) and the idempotent
    // producer (0.11); librdkafka must be told which protocol to speak.
    settings.emplace_back("api.version.request", "false");
    settings.emplace_back("broker.version.fallback", "0.9.0.1");
    settings.emplace_back("enable.idempotence", "false");
  }
  settings.insert(settings.end(), options.extra.begin(), options.extra.end());

  for (const auto& [key, value] : settings) {
    absl::Status status = Set(conf.get(), key, value);
    if (!status.ok()) {
      return status;
    }
  }
  return conf;
}

absl::StatusOr<std::string> GetKafkaConfigValue(const rd_kafka_conf_s& conf,
                                                std::string_view key) {
  std::string key_str(key);
  size_t size = 0;
  if (rd_kafka_conf_get(&conf, key_str.c_str(), nullptr, &size) !=
      RD_KAFKA_CONF_OK) {
    return absl::NotFoundError(fmt::format("unknown setting {}", key));
  }
  std::string value(size, '\0');
  rd_kafka_conf_get(&conf, key_str.c_str(), value.data(), &size);
  // size includes the terminating NUL.
  value.resize(size > 0 ? size - 1 : 0);
  return value;
}

absl::Status KafkaErrorToStatus(int err, std::string_view context) {
  const auto code = static_cast<rd_kafka_resp_err_t>(err);
  std::string message = fmt::format(
      "{}: {} ({})", context, rd_kafka_err2str(code), rd_kafka_err2name(code));
  switch (code) {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
      return absl::OkStatus();
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
    case RD_KAFKA_RESP_ERR__UNKNOWN_BROKER:
      return absl::NotFoundError(message);
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
    case RD_KAFKA_RESP_ERR_INVALID_PARTITIONS:
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
      return absl::InvalidArgumentError(message);
    case RD_KAFKA_RESP_ERR__FATAL:
      return absl::InternalError(message);
    default:
      return absl::UnavailableError(message);
  }
}

}  // namespace flowsched::bus
