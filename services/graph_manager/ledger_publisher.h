#pragma once

// Publishes the graph manager's ledger records (proto/flowsched/v1/ledger.proto)
// write-ahead: a record is staged in the same RocksDB batch as the state it
// describes ("l/<seq>", storage/keys.h), published after that batch commits,
// and its pending copy is deleted (in a later batch) only once the broker
// acknowledged it. A crash between commit and acknowledgement leaves the
// copy in RocksDB, and the next start publishes it again; readers keep the
// first record of each seq, so a duplicate is harmless.
//
// Thread-safety: not thread-safe; the graph manager's loop owns it.

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "flowsched/v1/ledger.pb.h"
#include "services/bus/producer.h"
#include "storage/state_store.h"

namespace flowsched::graph_manager {

class LedgerPublisher {
 public:
  LedgerPublisher(bus::Producer& producer, std::string topic);

  // Stages `record` (seq assigned by the caller) as pending, plus the
  // deletion of every pending record the broker acknowledged since.
  void Stage(const v1::LedgerRecord& record, storage::StateBatch& batch);
  // Stages only the deletion of acknowledged pending records.
  void StageAcknowledged(storage::StateBatch& batch);
  // Enqueues a staged record once its batch committed.
  void Publish(const v1::LedgerRecord& record);
  // At start: publishes again whatever a previous instance left pending.
  absl::Status RepublishPending(const storage::StateStore& store);
  // Waits for the broker's acknowledgement of everything produced (also
  // rounds and dead letters) if any ledger record is unacknowledged and
  // `min_interval_ms` passed since the last attempt (0: now). On failure the
  // unacknowledged records are produced again (backing off).
  void MaybeFlush(int min_interval_ms, int timeout_ms);
  // Tells the publisher about a Flush of the shared producer made by
  // someone else: an OK one acknowledges every record produced before it.
  void OnProducerFlushed(bool ok);

  [[nodiscard]] size_t unacknowledged() const { return unacked_.size(); }

 private:
  struct Unacked {
    uint64_t epoch = 0;  // of the writer, for the slices of a large record
    std::string bytes;   // the serialized record
  };
  void Produce(uint64_t seq, const Unacked& entry);

  bus::Producer& producer_;
  std::string topic_;
  std::map<uint64_t, Unacked> unacked_;  // by seq
  uint64_t acked_up_to_ = 0;    // pending copies <= this may be deleted
  uint64_t deleted_up_to_ = 0;  // ... and were staged for deletion
  int64_t last_flush_steady_us_ = 0;
  int backoff_ms_ = 0;
  // A record failed to enqueue since the last flush: that flush cannot
  // acknowledge it.
  bool produce_failed_ = false;
};

}  // namespace flowsched::graph_manager
