#include "services/graph_manager/outbox.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/clock.h"
#include "services/common/status_macros.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"

namespace flowsched::graph_manager {

Outbox::Outbox(bus::RecordSink& producer, std::string topic, std::string what,
               std::string_view store_prefix,
               std::string (*store_key)(uint64_t))
    : producer_(producer),
      topic_(std::move(topic)),
      what_(std::move(what)),
      store_prefix_(store_prefix),
      store_key_(store_key) {}

void Outbox::StageAcknowledged(storage::StateBatch& batch) {
  if (acked_up_to_ > deleted_up_to_) {
    // From where the last deletion ended (0 at start, which also takes the
    // copies a previous instance left). Ranges that all began at 0 would
    // stack a tombstone per flush over the same keys; RocksDB's recovery
    // splits them into fragments that each keep every tombstone covering
    // them, so a restart slowed with the rounds since the last flush.
    const uint64_t from = deleted_up_to_ == 0 ? 0 : deleted_up_to_ + 1;
    batch.DeleteRange(store_key_(from), store_key_(acked_up_to_ + 1));
    deleted_up_to_ = acked_up_to_;
    last_staged_deletions_ = acked_not_deleted_;
    acked_not_deleted_ = 0;
  }
}

void Outbox::OnStagedDeletionLost() {
  deleted_up_to_ = 0;
  acked_not_deleted_ += std::exchange(last_staged_deletions_, 0);
}

void Outbox::Stage(uint64_t seq, std::string_view stored,
                   storage::StateBatch& batch) {
  batch.Put(store_key_(seq), stored);
}

void Outbox::Publish(OutboxEntry entry) {
  Produce(entry.seq, entry.messages);
  unacked_[entry.seq] = std::move(entry.messages);
}

void Outbox::Produce(uint64_t seq, const std::vector<OutboxMessage>& messages) {
  for (const OutboxMessage& message : messages) {
    absl::Status produced = producer_.Produce(topic_, message.partition,
                                              message.key, message.value);
    if (!produced.ok()) {
      // Stays unacknowledged; the next flush attempt produces it again
      // (messages that did get through are told apart by readers).
      produce_failed_ = true;
      spdlog::warn("{} {} not enqueued: {}", what_, seq, produced.ToString());
      return;
    }
  }
}

absl::StatusOr<uint64_t> Outbox::RepublishPending(
    const storage::StateStore& store, const Decoder& decode) {
  size_t count = 0;
  uint64_t max_seq = 0;
  FLOWSCHED_RETURN_IF_ERROR(store.ScanPrefix(
      store_prefix_,
      [&](std::string_view key, std::string_view value) -> absl::Status {
        FLOWSCHED_ASSIGN_OR_RETURN(const uint64_t seq,
                                   storage::DecodeIdKey(key, store_prefix_));
        absl::StatusOr<std::vector<OutboxMessage>> messages =
            decode(seq, value);
        if (!messages.ok()) {
          return absl::DataLossError(absl::StrCat(
              "pending ", what_, " ", seq,
              " in the store is damaged: ", messages.status().message()));
        }
        Publish({seq, *std::move(messages)});
        max_seq = std::max(max_seq, seq);
        ++count;
        return absl::OkStatus();
      }));
  if (count > 0) {
    spdlog::info(
        "publishing again {} {}(s) that a previous instance had not "
        "seen acknowledged",
        count, what_);
  }
  return max_seq;
}

bool Outbox::FlushDue(int min_interval_ms) const {
  if (unacked_.empty()) return false;
  const int interval_ms = std::max(min_interval_ms, backoff_ms_);
  return SteadyMicros() - last_flush_steady_us_ >= int64_t{interval_ms} * 1000;
}

void Outbox::MaybeFlush(int min_interval_ms, int timeout_ms) {
  if (FlushDue(min_interval_ms)) {
    OnProducerFlushed(producer_.Flush(timeout_ms).ok());
  }
}

void Outbox::OnProducerFlushed(bool ok) {
  last_flush_steady_us_ = SteadyMicros();
  if (unacked_.empty()) return;
  if (ok && !produce_failed_) {
    acked_up_to_ = std::max(acked_up_to_, unacked_.rbegin()->first);
    acked_not_deleted_ += unacked_.size();
    unacked_.clear();
    backoff_ms_ = 0;
    return;
  }
  // Some delivery failed (maybe not ours): produce every unacknowledged
  // entry again; readers drop the duplicates.
  produce_failed_ = false;
  backoff_ms_ = std::clamp(backoff_ms_ * 2, 100, 5000);
  spdlog::warn("{} {}(s) not acknowledged, publishing them again",
               unacked_.size(), what_);
  for (const auto& [seq, messages] : unacked_) Produce(seq, messages);
}

}  // namespace flowsched::graph_manager
