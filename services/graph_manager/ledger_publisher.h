#pragma once

// Publishes the graph manager's ledger records (proto/flowsched/v1/ledger.proto)
// through an Outbox: a record is staged in the same RocksDB batch as the
// state it describes ("l/<seq>", storage/keys.h), published after that batch
// commits, and its pending copy is deleted (in a later batch) only once the
// broker acknowledged it. A crash between commit and acknowledgement leaves
// the copy in RocksDB, and the next start publishes it again; readers keep
// the first record of each seq, so a duplicate is harmless.
//
// Thread-safety: not thread-safe; the graph manager's loop owns it.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "flowsched/v1/ledger.pb.h"
#include "services/bus/producer.h"
#include "services/graph_manager/outbox.h"
#include "storage/state_store.h"

namespace flowsched::graph_manager {

// Flushing, acknowledgement and StageAcknowledged come from Outbox; the
// typed Stage, Publish and RepublishPending below hide its untyped ones.
class LedgerPublisher : public Outbox {
 public:
  LedgerPublisher(bus::Producer& producer, std::string topic);

  // A record serialized once: the bytes Stage put in the batch are the
  // bytes Publish produces (a round's record lists every placement, and
  // serializing it twice cost a second pass over it on the loop).
  struct Staged {
    uint64_t seq = 0;
    uint64_t epoch = 0;
    std::string bytes;
  };

  // Stages `record` (seq assigned by the caller) as pending.
  Staged Stage(const v1::LedgerRecord& record, storage::StateBatch& batch);
  // Enqueues a staged record once its batch committed.
  void Publish(Staged staged);
  // At start: publishes again whatever a previous instance left pending.
  absl::Status RepublishPending(const storage::StateStore& store);
};

}  // namespace flowsched::graph_manager
