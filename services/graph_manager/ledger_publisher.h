#pragma once

// Publishes the graph manager's ledger records
// (proto/flowsched/v1/ledger.proto) through an Outbox: a record is staged in
// the same RocksDB batch as the state it describes ("l/<seq>", storage/keys.h),
// published after that batch commits, and its pending copy is deleted (in a
// later batch) only once the broker acknowledged it. A crash between commit and
// acknowledgement leaves the copy in RocksDB, and the next start publishes it
// again; readers keep the first record of each seq, so a duplicate is harmless.
//
// Thread-safety: not thread-safe; the graph manager's loop owns it.

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "flowsched/v1/ledger.pb.h"
#include "services/bus/record_sink.h"
#include "services/graph_manager/outbox.h"
#include "storage/state_store.h"

namespace flowsched::graph_manager {

// Publishing, flushing, acknowledgement and StageAcknowledged come from
// Outbox; the typed Stage and RepublishPending below hide its untyped ones.
class LedgerPublisher : public Outbox {
 public:
  LedgerPublisher(bus::RecordSink& producer, std::string topic);

  // Stages `record` (seq assigned by the caller) as pending; Outbox::Publish
  // the result once the batch committed.
  OutboxEntry Stage(const v1::LedgerRecord& record, storage::StateBatch& batch);
  // At start: publishes again whatever a previous instance left pending.
  absl::Status RepublishPending(const storage::StateStore& store);
};

}  // namespace flowsched::graph_manager
