#pragma once

// A transactional outbox: messages the graph manager owes the brokers
// (ledger records, dead letters) are staged in RocksDB in the same batch as
// the state change that produced them, produced once that batch committed,
// and their pending copies deleted (in a later batch) only after the broker
// acknowledged them. A crash or a stop at any point in between leaves the
// copies, and the next start produces them again: delivery is at least
// once, and readers tell duplicates apart by the message's own identity
// (a ledger seq, a dead letter's topic, partition and offset).
//
// Entries are numbered by the caller (seq, increasing); the pending copy of
// entry seq lives under store_key(seq), a key family where bytewise order
// is seq order, so that acknowledged copies go with one range deletion.
//
// Acknowledgement: the producer is shared (rounds, ledger, letters), and a
// successful Flush reports every delivery queued before it, so whoever
// flushes tells every outbox (OnProducerFlushed).
//
// Thread-safety: not thread-safe; the graph manager's loop owns it.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/bus/record_sink.h"
#include "storage/state_store.h"

namespace flowsched::graph_manager {

// One Kafka record of an entry (a ledger record may take several slices).
struct OutboxMessage {
  int32_t partition = bus::kAnyPartition;
  std::string key;
  std::string value;
};

// An entry staged in a batch, with the messages Publish produces once that
// batch committed: an entry is serialized once, and the bytes produced are
// the bytes stored (a round's ledger record lists every placement of the
// round, a letter carries up to 512 KiB of its record).
struct OutboxEntry {
  uint64_t seq = 0;
  std::vector<OutboxMessage> messages;
};

class Outbox {
 public:
  // Turns a pending copy read back from the store into the messages to
  // produce; an error means the store is damaged (DataLoss).
  using Decoder = std::function<absl::StatusOr<std::vector<OutboxMessage>>(
      uint64_t seq, std::string_view stored)>;

  // `what` names an entry in logs ("ledger record", "dead letter").
  Outbox(bus::RecordSink& producer, std::string topic, std::string what,
         std::string_view store_prefix, std::string (*store_key)(uint64_t));

  // Stages the pending copy of entry `seq` (the typed outboxes build the
  // OutboxEntry from the same bytes).
  void Stage(uint64_t seq, std::string_view stored, storage::StateBatch& batch);
  // Stages the deletion of every copy acknowledged since the last call (the
  // graph manager adds it to each batch it commits, and commits it alone
  // when no input comes).
  void StageAcknowledged(storage::StateBatch& batch);
  // The batch StageAcknowledged last staged into was not committed (and
  // the process goes on): the next deletion starts at 0 again, so it also
  // takes the copies that one would have.
  void OnStagedDeletionLost();
  // Produces a staged entry once its batch committed.
  void Publish(OutboxEntry entry);
  // At start: produces again every pending copy a previous instance left;
  // returns the largest seq found (0: none), so numbering can go on above.
  absl::StatusOr<uint64_t> RepublishPending(const storage::StateStore& store,
                                            const Decoder& decode);

  // Whether an entry waits for acknowledgement and `min_interval_ms` (or
  // the backoff after failed flushes, if longer) passed since the last
  // flush this outbox heard of.
  [[nodiscard]] bool FlushDue(int min_interval_ms) const;
  // Flushes the shared producer if FlushDue(min_interval_ms).
  void MaybeFlush(int min_interval_ms, int timeout_ms);
  // A Flush of the shared producer finished: an OK one acknowledges every
  // entry produced before it; a failed one (or one after an entry could
  // not even be queued) produces every unacknowledged entry again.
  void OnProducerFlushed(bool ok);

  [[nodiscard]] size_t unacknowledged() const { return unacked_.size(); }
  // Entries whose copy is still in the store as far as this outbox knows:
  // unacknowledged, or acknowledged with the deletion not yet staged.
  [[nodiscard]] size_t pending() const {
    return unacked_.size() + acked_not_deleted_;
  }

 private:
  void Produce(uint64_t seq, const std::vector<OutboxMessage>& messages);

  bus::RecordSink& producer_;
  const std::string topic_;
  const std::string what_;
  const std::string store_prefix_;
  std::string (*const store_key_)(uint64_t);
  std::map<uint64_t, std::vector<OutboxMessage>> unacked_;  // by seq
  uint64_t acked_up_to_ = 0;    // pending copies <= this may be deleted
  uint64_t deleted_up_to_ = 0;  // ... and were staged for deletion
  size_t acked_not_deleted_ = 0;
  size_t last_staged_deletions_ = 0;  // acked_not_deleted_ at the last stage
  int64_t last_flush_steady_us_ = 0;
  int backoff_ms_ = 0;
  // An entry failed to enqueue since the last flush: that flush cannot
  // acknowledge it.
  bool produce_failed_ = false;
};

}  // namespace flowsched::graph_manager
