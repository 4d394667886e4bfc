#include "services/bus/consumer.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <thread>

#include "fmt/format.h"
#include "services/common/status_macros.h"
#include "spdlog/spdlog.h"

namespace flowsched::bus {
namespace {

struct PartitionListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* list) const {
    rd_kafka_topic_partition_list_destroy(list);
  }
};
struct MessageDeleter {
  void operator()(rd_kafka_message_t* message) const {
    rd_kafka_message_destroy(message);
  }
};
using MessagePtr = std::unique_ptr<rd_kafka_message_t, MessageDeleter>;
struct TopicDeleter {
  void operator()(rd_kafka_topic_t* topic) const {
    rd_kafka_topic_destroy(topic);
  }
};

constexpr int kWarmMetadataTimeoutMs = 2000;

// Errors that retrying will not fix; everything else librdkafka retries by
// itself and we only log.
bool IsPermanentConsumeError(rd_kafka_resp_err_t err) {
  switch (err) {
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR__FATAL:
      return true;
    default:
      return false;
  }
}

std::string_view Bytes(const void* data, size_t size) {
  if (data == nullptr) {
    return {};
  }
  return {static_cast<const char*>(data), size};
}

}  // namespace

absl::StatusOr<std::unique_ptr<Consumer>> Consumer::Create(
    const KafkaOptions& options, std::string group_id) {
  if (options.brokers.empty()) {
    return absl::InvalidArgumentError("KafkaOptions.brokers is empty");
  }
  if (group_id.empty()) {
    return absl::InvalidArgumentError("Consumer: empty group_id");
  }
  FLOWSCHED_ASSIGN_OR_RETURN(
      KafkaConfPtr conf,
      BuildKafkaConfig(options, {
                                    {"group.id", group_id},
                                    {"enable.auto.commit", "false"},
                                    {"enable.auto.offset.store", "false"},
                                    {"auto.offset.reset", "earliest"},
                                    // Latency matters more than batching
                                    // for scheduler events: a placement
                                    // round trip crosses two fetches, and
                                    // the mock broker holds an empty fetch
                                    // for the full wait.
                                    {"fetch.wait.max.ms", "10"},
                                    {"fetch.error.backoff.ms", "100"},
                                    // librdkafka stops prefetching a
                                    // partition at 100,000 queued records
                                    // by default and then leaves the
                                    // consumer idle for a fetch round trip
                                    // (330 ms seen while the graph manager
                                    // ingested a 148,000-event backlog).
                                    // Memory stays bounded by
                                    // queued.max.messages.kbytes (64 MiB).
                                    {"queued.min.messages", "1000000"},
                                    {"reconnect.backoff.ms", "100"},
                                    {"reconnect.backoff.max.ms", "2000"},
                                }));
  auto consumer = std::make_unique<Consumer>(Token());
  // Only a Subscribe()d consumer ever rebalances.
  rd_kafka_conf_set_opaque(conf.get(), consumer.get());
  rd_kafka_conf_set_rebalance_cb(
      conf.get(),
      [](rd_kafka_t* /*rk*/, rd_kafka_resp_err_t err,
         rd_kafka_topic_partition_list_t* partitions, void* opaque) {
        static_cast<Consumer*>(opaque)->Rebalance(err, partitions);
      });
  std::array<char, 512> errstr{};
  rd_kafka_t* rk =
      rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), errstr.data(), errstr.size());
  if (rk == nullptr) {
    return absl::InvalidArgumentError(
        fmt::format("cannot create Kafka consumer: {}", errstr.data()));
  }
  // rd_kafka_new took ownership of conf.
  static_cast<void>(conf.release());
  consumer->rk_.reset(rk);
  // One queue for messages, errors and logs, served by Poll().
  rd_kafka_poll_set_consumer(rk);
  return consumer;
}

Consumer::~Consumer() {
  if (rk_ != nullptr) {
    // Stops the fetchers; a group member also leaves the group, so its
    // partitions move to another member at once.
    rd_kafka_consumer_close(rk_.get());
  }
}

absl::Status Consumer::Assign(
    const std::vector<TopicPartitionOffset>& partitions) {
  std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionListDeleter> list(
      rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
  for (const TopicPartitionOffset& tpo : partitions) {
    if (tpo.topic.empty() || tpo.partition < 0 ||
        (tpo.offset < 0 && tpo.offset != kOffsetBeginning &&
         tpo.offset != kOffsetEnd)) {
      return absl::InvalidArgumentError(
          fmt::format("Assign: bad topic/partition/offset {}[{}]@{}", tpo.topic,
                      tpo.partition, tpo.offset));
    }
    rd_kafka_topic_partition_list_add(list.get(), tpo.topic.c_str(),
                                      tpo.partition)
        ->offset = tpo.offset;
  }
  WarmMetadata(partitions);
  // Records fetched under the old assignment are dropped by librdkafka's
  // version barrier, but an error we stashed belongs to the old one too.
  pending_error_ = absl::OkStatus();
  const rd_kafka_resp_err_t err = rd_kafka_assign(rk_.get(), list.get());
  return KafkaErrorToStatus(err, "Assign");
}

absl::Status Consumer::Subscribe(const std::vector<std::string>& topics,
                                 RebalanceListener listener) {
  if (topics.empty()) {
    return absl::InvalidArgumentError("Subscribe: no topics");
  }
  std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionListDeleter> list(
      rd_kafka_topic_partition_list_new(static_cast<int>(topics.size())));
  for (const std::string& topic : topics) {
    if (topic.empty()) {
      return absl::InvalidArgumentError("Subscribe: empty topic name");
    }
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(),
                                      RD_KAFKA_PARTITION_UA);
  }
  listener_ = std::move(listener);
  return KafkaErrorToStatus(rd_kafka_subscribe(rk_.get(), list.get()),
                            "Subscribe");
}

void Consumer::Rebalance(int err, rd_kafka_topic_partition_list_t* partitions) {
  const bool assigned = err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS;
  const char* protocol = rd_kafka_rebalance_protocol(rk_.get());
  const bool cooperative =
      protocol != nullptr && std::string_view(protocol) == "COOPERATIVE";
  std::vector<TopicPartitionOffset> changed;
  for (int i = 0; i < partitions->cnt; ++i) {
    rd_kafka_topic_partition_t& tp = partitions->elems[i];
    if (assigned) {
      tp.offset = listener_.start_offset
                      ? listener_.start_offset(tp.topic, tp.partition)
                      : kOffsetEnd;
    }
    changed.push_back({tp.topic, tp.partition, tp.offset});
  }
  rd_kafka_resp_err_t result = RD_KAFKA_RESP_ERR_NO_ERROR;
  if (cooperative) {
    rd_kafka_error_t* error =
        assigned ? rd_kafka_incremental_assign(rk_.get(), partitions)
                 : rd_kafka_incremental_unassign(rk_.get(), partitions);
    if (error != nullptr) {
      result = rd_kafka_error_code(error);
      rd_kafka_error_destroy(error);
    }
  } else {
    result = rd_kafka_assign(rk_.get(), assigned ? partitions : nullptr);
  }
  if (result != RD_KAFKA_RESP_ERR_NO_ERROR) {
    // librdkafka retries the rebalance; the listener hears nothing.
    spdlog::warn("Kafka consumer: {} during a rebalance failed: {}",
                 assigned ? "assign" : "unassign", rd_kafka_err2str(result));
    return;
  }
  spdlog::info("Kafka consumer group: {} {} partition(s){}",
               assigned ? "assigned" : "revoked", changed.size(),
               !assigned && rd_kafka_assignment_lost(rk_.get())
                   ? " (assignment lost)"
                   : "");
  if (listener_.changed) listener_.changed(assigned, changed);
}

void Consumer::WarmMetadata(
    const std::vector<TopicPartitionOffset>& partitions) {
  // Without known leaders librdkafka parks each partition's offset lookup
  // on a fixed ~500 ms retry timer; fetching metadata for new topics first
  // makes the first records arrive in milliseconds instead. Best effort:
  // on failure the timer path still works.
  for (const TopicPartitionOffset& tpo : partitions) {
    if (!known_topics_.insert(tpo.topic).second) {
      continue;
    }
    std::unique_ptr<rd_kafka_topic_t, TopicDeleter> topic(
        rd_kafka_topic_new(rk_.get(), tpo.topic.c_str(), nullptr));
    const rd_kafka_metadata_t* raw = nullptr;
    const rd_kafka_resp_err_t err = rd_kafka_metadata(
        rk_.get(), /*all_topics=*/0, topic.get(), &raw, kWarmMetadataTimeoutMs);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      spdlog::debug("Kafka consumer: metadata for {}: {}", tpo.topic,
                    rd_kafka_err2str(err));
      known_topics_.erase(tpo.topic);
      continue;
    }
    rd_kafka_metadata_destroy(raw);
  }
}

std::vector<Record> Consumer::PollOrBackOff(size_t max_records,
                                            int timeout_ms) {
  auto records = Poll(max_records, timeout_ms);
  if (records.ok()) {
    backoff_ms_ = 50;
    return std::move(*records);
  }
  spdlog::warn("poll failed, retrying in {} ms: {}", backoff_ms_,
               records.status().ToString());
  std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms_));
  backoff_ms_ = std::min(backoff_ms_ * 2, 2000);
  return {};
}

absl::StatusOr<std::vector<Record>> Consumer::Poll(size_t max_records,
                                                   int timeout_ms) {
  if (!pending_error_.ok()) {
    return std::exchange(pending_error_, absl::OkStatus());
  }
  std::vector<Record> records;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (records.size() < max_records) {
    int wait_ms = 0;
    if (records.empty()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      wait_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    MessagePtr message(rd_kafka_consumer_poll(rk_.get(), wait_ms));
    if (message == nullptr) {
      if (!records.empty() || wait_ms == 0) {
        break;
      }
      continue;
    }
    if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      Record& record = records.emplace_back();
      record.topic = rd_kafka_topic_name(message->rkt);
      record.partition = message->partition;
      record.offset = message->offset;
      record.key = Bytes(message->key, message->key_len);
      record.value = Bytes(message->payload, message->len);
      rd_kafka_timestamp_type_t type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
      record.timestamp_ms = rd_kafka_message_timestamp(message.get(), &type);
      continue;
    }
    const std::string where =
        message->rkt != nullptr
            ? fmt::format("{} [{}]", rd_kafka_topic_name(message->rkt),
                          message->partition)
            : std::string("consumer");
    if (message->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      spdlog::debug("Kafka consumer: {} reached end at offset {}", where,
                    message->offset);
      continue;
    }
    absl::Status status;
    std::array<char, 512> errstr{};
    if (rd_kafka_fatal_error(rk_.get(), errstr.data(), errstr.size()) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
      status = absl::InternalError(
          fmt::format("Kafka consumer fatal error: {}", errstr.data()));
    } else if (IsPermanentConsumeError(message->err)) {
      status = absl::UnavailableError(
          fmt::format("Kafka consumer: {}: {}", where,
                      rd_kafka_message_errstr(message.get())));
    } else {
      spdlog::warn("Kafka consumer: {}: {} ({})", where,
                   rd_kafka_message_errstr(message.get()),
                   rd_kafka_err2name(message->err));
      continue;
    }
    if (records.empty()) {
      return status;
    }
    pending_error_ = std::move(status);
    break;
  }
  return records;
}

absl::StatusOr<std::pair<int64_t, int64_t>> Consumer::Watermarks(
    std::string_view topic, int32_t partition, int timeout_ms) {
  int64_t low = -1;
  int64_t high = -1;
  const std::string topic_name(topic);
  const rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
      rk_.get(), topic_name.c_str(), partition, &low, &high, timeout_ms);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return KafkaErrorToStatus(
        err, fmt::format("Watermarks for {} [{}]", topic, partition));
  }
  return std::make_pair(low, high);
}

absl::StatusOr<std::pair<int64_t, int64_t>> Consumer::CachedWatermarks(
    std::string_view topic, int32_t partition) const {
  int64_t low = -1;
  int64_t high = -1;
  const std::string topic_name(topic);
  const rd_kafka_resp_err_t err = rd_kafka_get_watermark_offsets(
      rk_.get(), topic_name.c_str(), partition, &low, &high);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR || high < 0) {
    return absl::NotFoundError(
        fmt::format("no watermarks cached for {} [{}] yet", topic, partition));
  }
  return std::make_pair(low, high);
}

}  // namespace flowsched::bus
