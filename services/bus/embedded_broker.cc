#include "services/bus/embedded_broker.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>
#include <thread>

#include "fmt/format.h"
#include "services/common/status_macros.h"
#include "spdlog/spdlog.h"

namespace flowsched::bus {
namespace {

constexpr auto kControlPollInterval = std::chrono::milliseconds(100);
// A typo like "errors 0 6 1000000000" must not exhaust memory.
constexpr int kMaxInjectedErrors = 10000;

// Parses a whole word as a decimal integer. (Debian's Abseil has its own
// absl::string_view, so absl::SimpleAtoi does not take std::string_view.)
template <typename T>
bool ParseInt(std::string_view word, T* out) {
  const char* end = word.data() + word.size();
  auto [ptr, ec] = std::from_chars(word.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

std::vector<std::string_view> SplitWords(std::string_view line) {
  std::vector<std::string_view> words;
  size_t pos = 0;
  while (pos < line.size()) {
    const size_t start = line.find_first_not_of(" \t\r\n", pos);
    if (start == std::string_view::npos) {
      break;
    }
    size_t end = line.find_first_of(" \t\r\n", start);
    if (end == std::string_view::npos) {
      end = line.size();
    }
    words.push_back(line.substr(start, end - start));
    pos = end;
  }
  return words;
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& contents) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << contents;
    out.flush();
    if (!out) {
      return absl::UnavailableError(fmt::format("cannot write {}", tmp));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return absl::UnavailableError(
        fmt::format("cannot rename {} to {}: {}", tmp, path, ec.message()));
  }
  return absl::OkStatus();
}

KafkaOptions HandleOptions() {
  KafkaOptions options;
  options.client_id = "flowsched-embedded-broker";
  return options;
}

}  // namespace

void EmbeddedBroker::MockClusterDeleter::operator()(
    rd_kafka_mock_cluster_s* cluster) const {
  rd_kafka_mock_cluster_destroy(cluster);
}

absl::StatusOr<std::unique_ptr<EmbeddedBroker>> EmbeddedBroker::Start(
    int broker_count, const std::vector<TopicSpec>& topics) {
  if (broker_count < 1) {
    return absl::InvalidArgumentError(
        fmt::format("EmbeddedBroker: broker_count {} < 1", broker_count));
  }
  // The mock cluster needs a client handle for its bookkeeping; it never
  // produces. Notice-level logs are muted because this handle deliberately
  // has no bootstrap.servers.
  FLOWSCHED_ASSIGN_OR_RETURN(
      KafkaConfPtr conf,
      BuildKafkaConfig(HandleOptions(), {{"log_level", "4"}}));
  std::array<char, 512> errstr{};
  rd_kafka_t* rk =
      rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr.data(), errstr.size());
  if (rk == nullptr) {
    return absl::InternalError(
        fmt::format("EmbeddedBroker: rd_kafka_new: {}", errstr.data()));
  }
  static_cast<void>(conf.release());  // owned by rk now
  auto broker = std::make_unique<EmbeddedBroker>(Token());
  broker->handle_.reset(rk);
  broker->cluster_.reset(rd_kafka_mock_cluster_new(rk, broker_count));
  if (broker->cluster_ == nullptr) {
    return absl::InternalError(
        "EmbeddedBroker: rd_kafka_mock_cluster_new failed");
  }
  broker->broker_count_ = broker_count;
  for (const TopicSpec& topic : topics) {
    FLOWSCHED_RETURN_IF_ERROR(broker->CreateTopic(topic));
  }
  spdlog::info("Embedded Kafka cluster of {} brokers at {}", broker_count,
               broker->bootstrap_servers());
  return broker;
}

EmbeddedBroker::~EmbeddedBroker() {
  // The cluster uses the handle, so it goes first.
  cluster_.reset();
  handle_.reset();
}

std::string EmbeddedBroker::bootstrap_servers() const {
  return rd_kafka_mock_cluster_bootstraps(cluster_.get());
}

absl::Status EmbeddedBroker::CreateTopic(const TopicSpec& topic) {
  if (topic.name.empty() || topic.partitions < 1) {
    return absl::InvalidArgumentError(
        fmt::format("EmbeddedBroker: bad topic '{}' with {} partitions",
                    topic.name, topic.partitions));
  }
  const rd_kafka_resp_err_t err =
      rd_kafka_mock_topic_create(cluster_.get(), topic.name.c_str(),
                                 topic.partitions, std::min(3, broker_count_));
  return KafkaErrorToStatus(err, fmt::format("create topic {}", topic.name));
}

absl::Status EmbeddedBroker::SetBrokerDown(int32_t broker_id) {
  return KafkaErrorToStatus(
      rd_kafka_mock_broker_set_down(cluster_.get(), broker_id),
      fmt::format("set broker {} down", broker_id));
}

absl::Status EmbeddedBroker::SetBrokerUp(int32_t broker_id) {
  return KafkaErrorToStatus(
      rd_kafka_mock_broker_set_up(cluster_.get(), broker_id),
      fmt::format("set broker {} up", broker_id));
}

absl::Status EmbeddedBroker::PushRequestErrors(int16_t api_key,
                                               std::vector<int> errors) {
  if (api_key < 0) {
    return absl::InvalidArgumentError(
        fmt::format("PushRequestErrors: bad api key {}", api_key));
  }
  std::vector<rd_kafka_resp_err_t> codes;
  codes.reserve(errors.size());
  for (int error : errors) {
    // Only values inside the enum's range may be converted to it.
    if (error < RD_KAFKA_RESP_ERR__BEGIN ||
        error >= RD_KAFKA_RESP_ERR_END_ALL) {
      return absl::InvalidArgumentError(
          fmt::format("PushRequestErrors: bad error code {}", error));
    }
    codes.push_back(static_cast<rd_kafka_resp_err_t>(error));
  }
  rd_kafka_mock_push_request_errors_array(cluster_.get(), api_key, codes.size(),
                                          codes.data());
  return absl::OkStatus();
}

absl::Status EmbeddedBroker::ClearRequestErrors(int16_t api_key) {
  if (api_key < 0) {
    return absl::InvalidArgumentError(
        fmt::format("ClearRequestErrors: bad api key {}", api_key));
  }
  rd_kafka_mock_clear_request_errors(cluster_.get(), api_key);
  return absl::OkStatus();
}

absl::Status ApplyControlLine(EmbeddedBroker& broker, std::string_view line) {
  const std::vector<std::string_view> words = SplitWords(line);
  if (words.empty() || words[0][0] == '#') {
    return absl::OkStatus();
  }
  auto bad = [&line]() {
    return absl::InvalidArgumentError(
        fmt::format("bad control line '{}'; expected 'down <broker_id>', "
                    "'up <broker_id>' or 'errors <api_key> <error_code> "
                    "<count>'",
                    line));
  };
  if ((words[0] == "down" || words[0] == "up") && words.size() == 2) {
    int32_t broker_id = 0;
    if (!ParseInt(words[1], &broker_id) || broker_id < -1 ||
        broker_id > broker.broker_count()) {
      return bad();
    }
    return words[0] == "down" ? broker.SetBrokerDown(broker_id)
                              : broker.SetBrokerUp(broker_id);
  }
  if (words[0] == "errors" && words.size() == 4) {
    int api_key = 0;
    int error_code = 0;
    int count = 0;
    if (!ParseInt(words[1], &api_key) || !ParseInt(words[2], &error_code) ||
        !ParseInt(words[3], &count) || api_key < 0 || api_key > INT16_MAX ||
        count < 1 || count > kMaxInjectedErrors) {
      return bad();
    }
    return broker.PushRequestErrors(static_cast<int16_t>(api_key),
                                    std::vector<int>(count, error_code));
  }
  return bad();
}

int ApplyControlFile(EmbeddedBroker& broker, const std::string& path) {
  const std::string applying = path + ".applying";
  std::error_code ec;
  std::filesystem::rename(path, applying, ec);
  if (ec) {
    return -1;  // no control file (the common case)
  }
  std::ifstream in(applying);
  int applied = 0;
  std::string line;
  while (std::getline(in, line)) {
    absl::Status status = ApplyControlLine(broker, line);
    if (status.ok()) {
      if (!SplitWords(line).empty() && line.find('#') != 0) {
        spdlog::info("Embedded broker control: applied '{}'", line);
        ++applied;
      }
    } else {
      spdlog::warn("Embedded broker control: ignored '{}': {}", line,
                   status.ToString());
    }
  }
  in.close();
  std::filesystem::remove(applying, ec);
  return applied;
}

absl::Status ServeEmbeddedBroker(const EmbeddedBrokerOptions& options,
                                 const std::atomic<bool>& stop) {
  FLOWSCHED_ASSIGN_OR_RETURN(
      std::unique_ptr<EmbeddedBroker> broker,
      EmbeddedBroker::Start(options.broker_count,
                            DefaultTopicSpecs(options.topics)));
  const std::string bootstrap = broker->bootstrap_servers();
  const std::string control_file = options.bootstrap_file.empty()
                                       ? std::string()
                                       : options.bootstrap_file + ".control";
  if (!options.bootstrap_file.empty()) {
    FLOWSCHED_RETURN_IF_ERROR(
        WriteFileAtomically(options.bootstrap_file, bootstrap + "\n"));
  }
  std::cout << "bootstrap.servers=" << bootstrap << std::endl;  // flushes

  while (!stop.load()) {
    std::this_thread::sleep_for(kControlPollInterval);
    if (!control_file.empty()) {
      ApplyControlFile(*broker, control_file);
    }
  }
  spdlog::info("Embedded Kafka cluster at {} stopping", bootstrap);
  if (!options.bootstrap_file.empty()) {
    std::error_code ec;
    std::filesystem::remove(options.bootstrap_file, ec);
  }
  return absl::OkStatus();
}

}  // namespace flowsched::bus
