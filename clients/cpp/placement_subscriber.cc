#include "clients/cpp/placement_subscriber.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"

namespace flowsched::client {
namespace {

struct ListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* list) const {
    rd_kafka_topic_partition_list_destroy(list);
  }
};
using ListPtr = std::unique_ptr<rd_kafka_topic_partition_list_t, ListDeleter>;

// The topic's partition count from a metadata request for all topics (so
// that asking does not auto-create it).
absl::StatusOr<int> PartitionCount(rd_kafka_t* rk, const std::string& topic,
                                   int timeout_ms) {
  const rd_kafka_metadata_t* raw = nullptr;
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, nullptr, &raw, timeout_ms);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return bus::KafkaErrorToStatus(err, "placements metadata");
  }
  int count = -1;
  for (int i = 0; i < raw->topic_cnt; ++i) {
    if (topic == raw->topics[i].topic &&
        raw->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      count = raw->topics[i].partition_cnt;
    }
  }
  rd_kafka_metadata_destroy(raw);
  if (count <= 0) {
    return absl::NotFoundError(absl::StrCat("topic ", topic, " not found"));
  }
  return count;
}

// The group's committed offsets of `list`, per partition. A group
// coordinator that is moving or still loading (Kafka 0.9 answers
// NOT_COORDINATOR for a while after a group's first use) is asked again
// until `timeout_ms` passed; any other error, or one left then, fails: a
// partition read as "nothing committed" would be read from the wrong
// place.
rd_kafka_resp_err_t FetchCommitted(rd_kafka_t* rk,
                                   rd_kafka_topic_partition_list_t* list,
                                   int timeout_ms) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const auto coordinator_moving = [](rd_kafka_resp_err_t e) {
    return e == RD_KAFKA_RESP_ERR_NOT_COORDINATOR ||
           e == RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS ||
           e == RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE;
  };
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    rd_kafka_resp_err_t err = rd_kafka_committed(
        rk, list, static_cast<int>(std::max<int64_t>(1, left.count())));
    for (int i = 0; err == RD_KAFKA_RESP_ERR_NO_ERROR && i < list->cnt; ++i) {
      err = list->elems[i].err;
    }
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR || !coordinator_moving(err) ||
        std::chrono::steady_clock::now() >= deadline) {
      return err;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<PlacementSubscriber>>
PlacementSubscriber::Create(SubscriberOptions options, OnRound on_round) {
  if (options.group.empty() || options.kafka.brokers.empty()) {
    return absl::InvalidArgumentError(
        "PlacementSubscriber needs a group and a broker list");
  }
  if (options.on_stale && options.confirm_with_ledger) {
    return absl::InvalidArgumentError(
        "on_stale is for the placements-only mode: with confirm_with_ledger "
        "every round already comes with its stale decisions (Round::stale)");
  }
  FLOWSCHED_ASSIGN_OR_RETURN(
      bus::KafkaConfPtr conf,
      bus::BuildKafkaConfig(
          options.kafka,
          {{"group.id", options.group},
           {"enable.auto.commit", "false"},
           {"enable.auto.offset.store", "false"},
           {"auto.offset.reset", options.start_latest ? "latest" : "earliest"},
           {"fetch.wait.max.ms", "10"}}));
  std::array<char, 512> errstr{};
  rd_kafka_t* raw =
      rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), errstr.data(), errstr.size());
  if (raw == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create Kafka consumer: ", errstr.data()));
  }
  static_cast<void>(conf.release());  // rd_kafka_new took it
  bus::KafkaHandlePtr rk(raw);
  rd_kafka_poll_set_consumer(raw);
  const std::string topic = options.topic_prefix + "placements";
  absl::StatusOr<int> count =
      PartitionCount(raw, topic, options.metadata_timeout_ms);
  if (!count.ok()) {
    rd_kafka_consumer_close(raw);
    return count.status();
  }
  const bool report_stale = static_cast<bool>(options.on_stale);
  auto sub = std::make_unique<PlacementSubscriber>(
      Token(), *count, options.confirm_with_ledger, std::move(on_round),
      std::move(options.on_stale));
  sub->topic_ = topic;
  if (options.confirm_with_ledger || report_stale) {
    sub->ledger_topic_ = options.topic_prefix + "ledger";
  }
  sub->rk_ = std::move(rk);
  ListPtr list(rd_kafka_topic_partition_list_new(*count + 1));
  for (int p = 0; p < *count; ++p) {
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p);
  }
  if (report_stale) {  // how far an earlier subscriber reported
    rd_kafka_topic_partition_list_add(list.get(), sub->ledger_topic_.c_str(),
                                      0);
  }
  rd_kafka_resp_err_t err =
      FetchCommitted(raw, list.get(), options.metadata_timeout_ms);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    sub->closed_ = true;
    rd_kafka_consumer_close(raw);
    return bus::KafkaErrorToStatus(err, "committed offsets");
  }
  bool group_known = false;  // placements offsets committed
  if (report_stale) {
    const int64_t ledger_offset = list->elems[list->cnt - 1].offset;
    rd_kafka_topic_partition_list_del_by_idx(list.get(), list->cnt - 1);
    for (int i = 0; i < list->cnt; ++i) {
      group_known = group_known || list->elems[i].offset >= 0;
    }
    int64_t floor = 0;  // a new group reading from the beginning: all
    if (ledger_offset >= 0) {
      floor = ledger_offset;
      sub->ledger_committed_ = ledger_offset;
    } else if (!group_known && options.start_latest) {
      // A new group acting on rounds from now on: older rounds are not its.
      int64_t low = 0;
      int64_t high = 0;
      err = rd_kafka_query_watermark_offsets(raw, sub->ledger_topic_.c_str(), 0,
                                             &low, &high,
                                             options.metadata_timeout_ms);
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        sub->closed_ = true;
        rd_kafka_consumer_close(raw);
        return bus::KafkaErrorToStatus(err, "ledger watermarks");
      }
      floor = high;
    }  // else: a group that never reported: at least once, from the start
    FLOWSCHED_RETURN_IF_ERROR(sub->assembler_.ReportStale(floor));
  }
  for (int i = 0; i < list->cnt; ++i) {
    rd_kafka_topic_partition_t& tp = list->elems[i];
    if (tp.offset >= 0) {
      sub->position_[tp.partition] = tp.offset;
      sub->committed_[tp.partition] = tp.offset;
    } else {
      tp.offset = options.start_latest ? RD_KAFKA_OFFSET_END
                                       : RD_KAFKA_OFFSET_BEGINNING;
    }
  }
  if (!sub->ledger_topic_.empty()) {  // one partition, always all of it
    rd_kafka_topic_partition_list_add(list.get(), sub->ledger_topic_.c_str(), 0)
        ->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  err = rd_kafka_assign(raw, list.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    sub->closed_ = true;
    rd_kafka_consumer_close(raw);
    return bus::KafkaErrorToStatus(err, "assign placements");
  }
  return sub;
}

PlacementSubscriber::~PlacementSubscriber() { static_cast<void>(Close()); }

absl::StatusOr<int> PlacementSubscriber::Poll(int timeout_ms,
                                              size_t max_records) {
  if (closed_) return absl::FailedPreconditionError("subscriber closed");
  int wait_ms = timeout_ms;
  for (size_t n = 0; n < max_records; ++n) {
    rd_kafka_message_t* msg = rd_kafka_consumer_poll(rk_.get(), wait_ms);
    if (msg == nullptr) break;
    wait_ms = 0;  // after the first record, only what is queued
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR && !ledger_topic_.empty() &&
        ledger_topic_ == rd_kafka_topic_name(msg->rkt)) {
      v1::LedgerRecord record;
      if (record.ParseFromArray(msg->payload, static_cast<int>(msg->len))) {
        assembler_.AddLedger(std::move(record), msg->offset);
      }
    } else if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      v1::PlacementRecord record;
      const bool ok =
          record.ParseFromArray(msg->payload, static_cast<int>(msg->len));
      assembler_.Add(msg->partition, msg->offset, ok ? &record : nullptr);
      position_[msg->partition] = msg->offset + 1;
    } else if (msg->err == RD_KAFKA_RESP_ERR__FATAL) {
      absl::Status status = bus::KafkaErrorToStatus(msg->err, "consume");
      rd_kafka_message_destroy(msg);
      return status;
    }  // partition EOF and transient errors: librdkafka retries
    rd_kafka_message_destroy(msg);
  }
  return Deliver();
}

absl::StatusOr<int> PlacementSubscriber::Deliver() {
  int delivered = 0;
  while (true) {
    // Reports first: each is for a round already delivered.
    if (std::optional<StaleReport> report = assembler_.NextStaleReport()) {
      FLOWSCHED_RETURN_IF_ERROR(on_stale_(*report));  // offered again
      assembler_.CommitStaleReport();
      FLOWSCHED_RETURN_IF_ERROR(Commit());
      continue;
    }
    std::optional<Round> round = assembler_.NextRound();
    if (!round.has_value()) break;
    FLOWSCHED_RETURN_IF_ERROR(on_round_(*round));  // offered again
    assembler_.Commit(*round);
    FLOWSCHED_RETURN_IF_ERROR(Commit());
    ++delivered;
  }
  return delivered;
}

absl::Status PlacementSubscriber::Commit() {
  const std::map<int32_t, int64_t> held = assembler_.HeldOffsets();
  ListPtr list(rd_kafka_topic_partition_list_new(partition_count_));
  for (const auto& [p, position] : position_) {
    auto h = held.find(p);
    const int64_t offset =
        h == held.end() ? position : std::min(position, h->second);
    auto c = committed_.find(p);
    if (c == committed_.end() || c->second != offset) {
      rd_kafka_topic_partition_list_add(list.get(), topic_.c_str(), p)->offset =
          offset;
    }
  }
  // on_stale: every RoundApplied below this ledger offset was reported (or
  // was not this group's to report).
  const std::optional<int64_t> ledger = assembler_.LedgerCommitOffset();
  const bool commit_ledger = ledger.has_value() && *ledger != ledger_committed_;
  if (commit_ledger) {
    rd_kafka_topic_partition_list_add(list.get(), ledger_topic_.c_str(), 0)
        ->offset = *ledger;
  }
  if (list->cnt == 0) return absl::OkStatus();
  rd_kafka_resp_err_t err = rd_kafka_commit(rk_.get(), list.get(), 0);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return bus::KafkaErrorToStatus(err, "commit placements offsets");
  }
  for (int i = 0; i < list->cnt; ++i) {
    if (topic_ == list->elems[i].topic) {
      committed_[list->elems[i].partition] = list->elems[i].offset;
    }
  }
  if (commit_ledger) ledger_committed_ = *ledger;
  return absl::OkStatus();
}

absl::StatusOr<int> PlacementSubscriber::Run(const std::function<bool()>& stop,
                                             int timeout_ms,
                                             int poll_timeout_ms) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int delivered = 0;
  while (!stop() && std::chrono::steady_clock::now() < deadline) {
    FLOWSCHED_ASSIGN_OR_RETURN(int n, Poll(poll_timeout_ms));
    delivered += n;
  }
  return delivered;
}

absl::Status PlacementSubscriber::Close() {
  if (closed_ || rk_ == nullptr) return absl::OkStatus();
  closed_ = true;
  absl::Status status = Commit();
  rd_kafka_consumer_close(rk_.get());
  return status;
}

}  // namespace flowsched::client
