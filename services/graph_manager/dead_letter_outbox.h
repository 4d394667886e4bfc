#pragma once

// The graph manager's dead letters (rejected events, undecodable placements
// records) through an Outbox: each letter is staged ("d/<seq>",
// storage/keys.h) in the RocksDB batch that moves the stored offset past
// its record, produced after that batch commits, and its pending copy
// deleted once the broker acknowledged it. So no crash, stop or broker
// outage loses a letter, and none makes the batch wait for the broker; a
// letter may arrive twice (readers know it by topic, partition, offset).
//
// Thread-safety: not thread-safe; the graph manager's loop owns it.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "flowsched/v1/dead_letter.pb.h"
#include "services/bus/record_sink.h"
#include "services/graph_manager/outbox.h"
#include "storage/state_store.h"

namespace flowsched::graph_manager {

// Publishing, flushing, acknowledgement and StageAcknowledged come from
// Outbox; the typed Stage and RepublishPending below hide its untyped ones.
class DeadLetterOutbox : public Outbox {
 public:
  DeadLetterOutbox(bus::RecordSink& producer, std::string topic);

  // Stages `letter` as entry `seq` (numbered by the caller, increasing,
  // GraphManagerMeta.dead_letter_seq) in the batch that consumes its record;
  // Outbox::Publish the result once the batch committed.
  OutboxEntry Stage(uint64_t seq, const v1::DeadLetter& letter,
                    storage::StateBatch& batch);
  // At start: produces again the letters a previous instance left pending;
  // returns the largest seq among them (0: none).
  absl::StatusOr<uint64_t> RepublishPending(const storage::StateStore& store);
};

}  // namespace flowsched::graph_manager
