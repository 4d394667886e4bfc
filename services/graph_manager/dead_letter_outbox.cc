#include "services/graph_manager/dead_letter_outbox.h"

#include <utility>
#include <vector>

#include "services/bus/dead_letter_publisher.h"
#include "storage/keys.h"

namespace flowsched::graph_manager {
namespace {

std::vector<OutboxMessage> DeadLetterMessages(const v1::DeadLetter& letter,
                                              std::string bytes) {
  std::vector<OutboxMessage> messages;
  messages.push_back({bus::kAnyPartition, bus::DeadLetterPartitionKey(letter),
                      std::move(bytes)});
  return messages;
}

}  // namespace

DeadLetterOutbox::DeadLetterOutbox(bus::RecordSink& producer, std::string topic)
    : Outbox(producer, std::move(topic), "dead letter",
             storage::kDeadLetterPrefix, &storage::DeadLetterKey) {}

OutboxEntry DeadLetterOutbox::Stage(uint64_t seq, const v1::DeadLetter& letter,
                                    storage::StateBatch& batch) {
  std::string bytes = letter.SerializeAsString();
  Outbox::Stage(seq, bytes, batch);
  return {seq, DeadLetterMessages(letter, std::move(bytes))};
}

absl::StatusOr<uint64_t> DeadLetterOutbox::RepublishPending(
    const storage::StateStore& store) {
  return Outbox::RepublishPending(
      store,
      [](uint64_t, std::string_view stored)
          -> absl::StatusOr<std::vector<OutboxMessage>> {
        v1::DeadLetter letter;
        if (!letter.ParseFromString(std::string(stored))) {
          return absl::DataLossError("the letter does not parse");
        }
        return DeadLetterMessages(letter, std::string(stored));
      });
}

}  // namespace flowsched::graph_manager
