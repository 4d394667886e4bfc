// GraphManager: the dead-letter outbox and the producer's acknowledgements.
// Dead letters are staged in the same batch as the state change that
// rejected the record, published after the commit, and dropped from the
// store once the broker acknowledged them.

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "services/bus/dead_letter_publisher.h"
#include "services/graph_manager/graph_manager.h"
#include "spdlog/spdlog.h"
#include "storage/keys.h"

namespace flowsched::graph_manager {

void GraphManager::AddDeadLetter(const bus::Record& record,
                                 const absl::Status& reason) {
  if (metrics_) metrics_->dead_letters.Count(reason.code());
  batch_letters_.push_back(
      bus::MakeDeadLetter(record, reason, "graph-manager", clock_.NowMicros()));
}

void GraphManager::StageDeadLetters(storage::StateBatch& batch) {
  // Staged, not produced: a letter produced before its batch commits could
  // arrive for a record a crash then reads (and letters) again, and one
  // produced after the commit without a pending copy is lost by a crash or
  // an outage in between. With the copy in the batch neither happens, and
  // the batch never waits for the broker.
  auto& through = *meta_.mutable_placement_letters_through();
  for (const v1::DeadLetter& letter : batch_letters_) {
    const uint64_t seq = meta_.dead_letter_seq() + 1;
    meta_.set_dead_letter_seq(seq);
    staged_letters_.push_back(dead_letters_->Stage(seq, letter, batch));
    if (letter.topic() == options_.topics.placements) {
      int64_t& next = through[letter.partition()];
      next = std::max(next, letter.offset() + 1);
    }
  }
  batch_letters_.clear();
}

absl::Status GraphManager::SalvagePendingLetters(const std::string& moved_dir) {
  auto damaged = storage::StateStore::Open(
      moved_dir, {.create_if_missing = false, .read_only = true});
  if (!damaged.ok()) {
    spdlog::error(
        "pending dead letters of the damaged store {} are lost: "
        "it does not open ({})",
        moved_dir, damaged.status().ToString());
    return absl::OkStatus();
  }
  size_t salvaged = 0;
  size_t unreadable = 0;
  absl::Status scanned = (*damaged)->ScanPrefix(
      storage::kDeadLetterPrefix,
      [&](std::string_view key, std::string_view value) {
        v1::DeadLetter letter;
        if (letter.ParseFromString(std::string(value))) {
          batch_letters_.push_back(std::move(letter));
          ++salvaged;
        } else {
          absl::StatusOr<uint64_t> seq =
              storage::DecodeIdKey(key, storage::kDeadLetterPrefix);
          spdlog::error(
              "pending dead letter {} of the damaged store {} does "
              "not parse; it is lost",
              seq.ok() ? std::to_string(*seq) : "with a bad key", moved_dir);
          ++unreadable;
        }
        return absl::OkStatus();
      });
  if (!scanned.ok()) {
    // What the scan read before it broke is still salvaged below.
    spdlog::error(
        "the pending dead letters of the damaged store {} could "
        "not all be read ({}); the rest are lost",
        moved_dir, scanned.ToString());
  }
  if (salvaged == 0) return absl::OkStatus();
  spdlog::warn(
      "salvaged {} pending dead letter(s) from the damaged store {} "
      "({} unreadable); publishing them again",
      salvaged, moved_dir, unreadable);
  storage::StateBatch batch;
  StageDeadLetters(batch);
  StageMetaWithTime(batch);
  absl::Status committed = store_->Commit(std::move(batch));
  if (!committed.ok()) {
    staged_letters_.clear();
    return committed;
  }
  PublishStagedLetters();
  return absl::OkStatus();
}

void GraphManager::PublishStagedLetters() {
  for (OutboxEntry& staged : staged_letters_) {
    dead_letters_->Publish(std::move(staged));
  }
  staged_letters_.clear();
}

void GraphManager::FlushOutboxes(int min_interval_ms, int timeout_ms,
                                 bool idle) {
  if (ledger_->FlushDue(min_interval_ms) ||
      dead_letters_->FlushDue(min_interval_ms)) {
    OnProducerFlushed(producer_->Flush(timeout_ms).ok());
  }
  // While input flows, every commit drops the copies acknowledged since
  // (StageMetaWithTime), at no extra write. When none comes, a commit of
  // their own: a crash would otherwise publish them all again (harmless,
  // readers drop duplicates, but every one of them twice).
  if (!idle) return;
  storage::StateBatch batch;
  StageAcknowledgedCopies(batch);
  if (batch.empty()) return;
  absl::Status committed = store_->Commit(std::move(batch));
  if (!committed.ok()) {
    // The copies stay until a later commit drops them (or the next start
    // publishes them again).
    ledger_->OnStagedDeletionLost();
    dead_letters_->OnStagedDeletionLost();
    spdlog::warn("dropping acknowledged outbox copies: {}",
                 committed.ToString());
  }
}

void GraphManager::StageAcknowledgedCopies(storage::StateBatch& batch) {
  ledger_->StageAcknowledged(batch);
  dead_letters_->StageAcknowledged(batch);
}

void GraphManager::OnProducerFlushed(bool ok) {
  ledger_->OnProducerFlushed(ok);
  dead_letters_->OnProducerFlushed(ok);
}

}  // namespace flowsched::graph_manager
