#include "services/bus/producer.h"

#include <librdkafka/rdkafka.h>

#include <array>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "services/common/status_macros.h"
#include "spdlog/spdlog.h"

namespace flowsched::bus {
namespace {

// Queue-full retries: librdkafka drains its queue as the broker acks, so a
// short wait usually frees room; beyond ~1 s the broker is the problem.
constexpr int kQueueFullRetries = 10;
constexpr int kQueueFullPollMs = 100;

struct MetadataDeleter {
  void operator()(const rd_kafka_metadata_t* metadata) const {
    rd_kafka_metadata_destroy(metadata);
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Producer>> Producer::Create(
    const KafkaOptions& options) {
  if (options.brokers.empty()) {
    return absl::InvalidArgumentError("KafkaOptions.brokers is empty");
  }
  FLOWSCHED_ASSIGN_OR_RETURN(
      KafkaConfPtr conf,
      BuildKafkaConfig(options, {
                                    {"enable.idempotence", "true"},
                                    {"acks", "all"},
                                    {"partitioner", "murmur2_random"},
                                    {"linger.ms", "5"},
                                    {"message.max.bytes", "1000000"},
                                    {"message.timeout.ms", "30000"},
                                    {"reconnect.backoff.ms", "100"},
                                    {"reconnect.backoff.max.ms", "2000"},
                                    // A round or snapshot at 12,500
                                    // machines is 20+ MB of protobuf,
                                    // and the embedded broker keeps 5 MiB
                                    // per partition: a solver worker busy
                                    // elsewhere found the first parts
                                    // gone (bench e2e: 8 of 10 runs).
                                    // LZ4 shrinks load-spreading rounds
                                    // below that (0 of 5 runs); Quincy
                                    // arcs compress only ~2x, so larger
                                    // rounds still depend on the
                                    // snapshot retry. Kafka 0.9 reads
                                    // LZ4 (librdkafka frames it the old
                                    // way for pre-0.10 brokers).
                                    {"compression.codec", "lz4"},
                                }));
  auto producer = std::make_unique<Producer>(Token());
  rd_kafka_conf_set_opaque(conf.get(), producer.get());
  rd_kafka_conf_set_dr_msg_cb(conf.get(), &Producer::OnDelivery);
  rd_kafka_conf_set_error_cb(conf.get(), &Producer::OnError);

  std::array<char, 512> errstr{};
  // rd_kafka_new takes ownership of conf only on success.
  rd_kafka_t* rk =
      rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr.data(), errstr.size());
  if (rk == nullptr) {
    return absl::InvalidArgumentError(
        fmt::format("cannot create Kafka producer: {}", errstr.data()));
  }
  static_cast<void>(conf.release());
  producer->rk_.reset(rk);
  return producer;
}

Producer::~Producer() {
  if (rk_ != nullptr) {
    // Give in-flight messages a moment; rd_kafka_destroy would otherwise
    // drop them silently. Callers who care call Flush themselves.
    int outstanding = OutstandingCount();
    if (outstanding > 0) {
      rd_kafka_flush(rk_.get(), 2000);
      outstanding = OutstandingCount();
      if (outstanding > 0) {
        spdlog::warn("Producer destroyed with {} undelivered messages",
                     outstanding);
      }
    }
  }
}

void Producer::OnDelivery(rd_kafka_s* /*rk*/, const rd_kafka_message_s* message,
                          void* opaque) {
  if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    return;
  }
  auto* self = static_cast<Producer*>(opaque);
  std::string topic = message->rkt != nullptr
                          ? rd_kafka_topic_name(message->rkt)
                          : std::string("?");
  std::lock_guard lock(self->mu_);
  if (self->failed_deliveries_++ == 0) {
    self->first_failure_ = fmt::format("{} [{}]: {}", topic, message->partition,
                                       rd_kafka_err2str(message->err));
  }
}

void Producer::OnError(rd_kafka_s* rk, int err, const char* reason,
                       void* /*opaque*/) {
  const auto code = static_cast<rd_kafka_resp_err_t>(err);
  if (code == RD_KAFKA_RESP_ERR__FATAL) {
    std::array<char, 512> errstr{};
    rd_kafka_fatal_error(rk, errstr.data(), errstr.size());
    spdlog::error("Kafka producer fatal error: {}", errstr.data());
    return;
  }
  // Transport errors are expected while a broker restarts, librdkafka
  // retries them itself, and its log callback has already reported them.
  if (code == RD_KAFKA_RESP_ERR__TRANSPORT) {
    spdlog::debug("Kafka producer: {}", reason);
    return;
  }
  spdlog::warn("Kafka producer: {} ({})", reason, rd_kafka_err2name(code));
}

absl::Status Producer::Produce(std::string_view topic, int32_t partition,
                               std::string_view key, std::string_view value) {
  if (topic.empty()) {
    return absl::InvalidArgumentError("Produce: empty topic name");
  }
  if (partition < kAnyPartition) {
    return absl::InvalidArgumentError(
        fmt::format("Produce: bad partition {}", partition));
  }
  const std::string topic_name(topic);
  std::array<rd_kafka_vu_t, 5> vus{};
  vus[0].vtype = RD_KAFKA_VTYPE_TOPIC;
  vus[0].u.cstr = topic_name.c_str();
  vus[1].vtype = RD_KAFKA_VTYPE_PARTITION;
  vus[1].u.i32 = partition;
  // RD_KAFKA_MSG_F_COPY: librdkafka copies the bytes, so the non-const
  // pointers below are never written through.
  vus[2].vtype = RD_KAFKA_VTYPE_KEY;
  vus[2].u.mem.ptr = const_cast<char*>(key.data());
  vus[2].u.mem.size = key.size();
  vus[3].vtype = RD_KAFKA_VTYPE_VALUE;
  vus[3].u.mem.ptr = const_cast<char*>(value.data());
  vus[3].u.mem.size = value.size();
  vus[4].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
  vus[4].u.i = RD_KAFKA_MSG_F_COPY;

  for (int attempt = 0;; ++attempt) {
    rd_kafka_error_t* raw_error =
        rd_kafka_produceva(rk_.get(), vus.data(), vus.size());
    if (raw_error == nullptr) {
      // Serve delivery reports so failures are recorded promptly.
      rd_kafka_poll(rk_.get(), 0);
      return absl::OkStatus();
    }
    std::unique_ptr<rd_kafka_error_t, decltype(&rd_kafka_error_destroy)> error(
        raw_error, &rd_kafka_error_destroy);
    const rd_kafka_resp_err_t code = rd_kafka_error_code(error.get());
    if (code == RD_KAFKA_RESP_ERR__QUEUE_FULL && attempt < kQueueFullRetries) {
      rd_kafka_poll(rk_.get(), kQueueFullPollMs);
      continue;
    }
    if (rd_kafka_error_is_fatal(error.get()) != 0) {
      return absl::InternalError(
          fmt::format("Produce to {}: fatal: {}", topic,
                      rd_kafka_error_string(error.get())));
    }
    return KafkaErrorToStatus(code, fmt::format("Produce to {}", topic));
  }
}

absl::Status Producer::Flush(int timeout_ms) {
  const rd_kafka_resp_err_t flush_err = rd_kafka_flush(rk_.get(), timeout_ms);
  uint64_t failed = 0;
  std::string first;
  {
    std::lock_guard lock(mu_);
    failed = std::exchange(failed_deliveries_, 0);
    first = std::exchange(first_failure_, std::string());
  }
  std::string message;
  if (flush_err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    message = fmt::format("Flush: {} messages still outstanding after {} ms",
                          OutstandingCount(), timeout_ms);
  }
  if (failed > 0) {
    if (!message.empty()) {
      message += "; ";
    }
    message += fmt::format(
        "{} deliveries failed since the last Flush, first: {}", failed, first);
  }
  if (!message.empty()) {
    return absl::UnavailableError(message);
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Producer::PartitionCount(std::string_view topic,
                                             int timeout_ms) {
  const rd_kafka_metadata_t* raw = nullptr;
  const rd_kafka_resp_err_t err =
      rd_kafka_metadata(rk_.get(), /*all_topics=*/1, nullptr, &raw, timeout_ms);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return KafkaErrorToStatus(err, "PartitionCount: metadata request");
  }
  std::unique_ptr<const rd_kafka_metadata_t, MetadataDeleter> metadata(raw);
  for (int i = 0; i < metadata->topic_cnt; ++i) {
    const rd_kafka_metadata_topic_t& t = metadata->topics[i];
    if (topic != t.topic) {
      continue;
    }
    if (t.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return KafkaErrorToStatus(t.err,
                                fmt::format("PartitionCount for {}", topic));
    }
    return t.partition_cnt;
  }
  return absl::NotFoundError(fmt::format("topic {} does not exist", topic));
}

int Producer::OutstandingCount() const { return rd_kafka_outq_len(rk_.get()); }

}  // namespace flowsched::bus
