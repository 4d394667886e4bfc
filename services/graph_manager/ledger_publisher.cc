#include "services/graph_manager/ledger_publisher.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/clock.h"
#include "services/common/status_macros.h"
#include "services/graph_manager/ledger_parts.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"

namespace flowsched::graph_manager {
namespace {

// One partition: the ledger is a single total order.
constexpr int32_t kLedgerPartition = 0;

}  // namespace

LedgerPublisher::LedgerPublisher(bus::Producer& producer, std::string topic)
    : producer_(producer), topic_(std::move(topic)) {}

void LedgerPublisher::StageAcknowledged(storage::StateBatch& batch) {
  if (acked_up_to_ > deleted_up_to_) {
    batch.DeleteRange(storage::LedgerKey(0),
                      storage::LedgerKey(acked_up_to_ + 1));
    deleted_up_to_ = acked_up_to_;
  }
}

void LedgerPublisher::Stage(const v1::LedgerRecord& record,
                            storage::StateBatch& batch) {
  StageAcknowledged(batch);
  batch.Put(storage::LedgerKey(record.seq()), record.SerializeAsString());
}

void LedgerPublisher::Publish(const v1::LedgerRecord& record) {
  Unacked entry{record.epoch(), record.SerializeAsString()};
  Produce(record.seq(), entry);
  unacked_[record.seq()] = std::move(entry);
}

void LedgerPublisher::Produce(uint64_t seq, const Unacked& entry) {
  for (const std::string& part :
       SplitLedgerRecord(entry.bytes, seq, entry.epoch)) {
    absl::Status produced =
        producer_.Produce(topic_, kLedgerPartition, "ledger", part);
    if (!produced.ok()) {
      // Stays unacknowledged; the next flush attempt produces it again
      // (slices that did get through are kept once by readers).
      produce_failed_ = true;
      spdlog::warn("ledger record {} not enqueued: {}", seq,
                   produced.ToString());
      return;
    }
  }
}

absl::Status LedgerPublisher::RepublishPending(
    const storage::StateStore& store) {
  size_t count = 0;
  FLOWSCHED_RETURN_IF_ERROR(store.ScanPrefix(
      storage::kLedgerPrefix,
      [&](std::string_view key, std::string_view value) -> absl::Status {
        FLOWSCHED_ASSIGN_OR_RETURN(
            const uint64_t seq,
            storage::DecodeIdKey(key, storage::kLedgerPrefix));
        v1::LedgerRecord record;
        if (!record.ParseFromString(std::string(value))) {
          return absl::DataLossError(absl::StrCat(
              "pending ledger record ", seq, " in the store does not parse"));
        }
        Unacked entry{record.epoch(), std::string(value)};
        Produce(seq, entry);
        unacked_[seq] = std::move(entry);
        ++count;
        return absl::OkStatus();
      }));
  if (count > 0) {
    spdlog::info("publishing {} ledger records again that a previous "
                 "instance had not seen acknowledged",
                 count);
  }
  return absl::OkStatus();
}

void LedgerPublisher::MaybeFlush(int min_interval_ms, int timeout_ms) {
  if (unacked_.empty()) return;
  const int64_t now = SteadyMicros();
  const int interval_ms = std::max(min_interval_ms, backoff_ms_);
  if (now - last_flush_steady_us_ < int64_t{interval_ms} * 1000) return;
  last_flush_steady_us_ = now;
  OnProducerFlushed(producer_.Flush(timeout_ms).ok());
}

void LedgerPublisher::OnProducerFlushed(bool ok) {
  if (unacked_.empty()) return;
  if (ok && !produce_failed_) {
    acked_up_to_ = std::max(acked_up_to_, unacked_.rbegin()->first);
    unacked_.clear();
    backoff_ms_ = 0;
    return;
  }
  // Some delivery failed (maybe not ours): produce every unacknowledged
  // record again; duplicates are dropped by readers.
  produce_failed_ = false;
  backoff_ms_ = std::clamp(backoff_ms_ * 2, 100, 5000);
  spdlog::warn("ledger: {} records not acknowledged, publishing them again",
               unacked_.size());
  for (const auto& [seq, entry] : unacked_) Produce(seq, entry);
}

}  // namespace flowsched::graph_manager
