#include "services/graph_manager/ledger_publisher.h"

#include <utility>
#include <vector>

#include "services/common/status_macros.h"
#include "services/graph_manager/ledger_parts.h"
#include "storage/keys.h"

namespace flowsched::graph_manager {
namespace {

// One partition: the ledger is a single total order.
constexpr int32_t kLedgerPartition = 0;

// A record as produced: slices of at most the broker's message size, each
// carrying seq and the writer's epoch (ledger_parts.h).
std::vector<OutboxMessage> LedgerMessages(std::string bytes, uint64_t seq,
                                          GraphEpoch epoch) {
  std::vector<OutboxMessage> messages;
  for (std::string& part : SplitLedgerRecord(std::move(bytes), seq, epoch)) {
    messages.push_back({kLedgerPartition, "ledger", std::move(part)});
  }
  return messages;
}

}  // namespace

LedgerPublisher::LedgerPublisher(bus::RecordSink& producer, std::string topic)
    : Outbox(producer, std::move(topic), "ledger record",
             storage::kLedgerPrefix, &storage::LedgerKey) {}

OutboxEntry LedgerPublisher::Stage(const v1::LedgerRecord& record,
                                   storage::StateBatch& batch) {
  std::string bytes = record.SerializeAsString();
  Outbox::Stage(record.seq(), bytes, batch);
  return {record.seq(), LedgerMessages(std::move(bytes), record.seq(),
                                       GraphEpoch(record.epoch()))};
}

absl::Status LedgerPublisher::RepublishPending(
    const storage::StateStore& store) {
  return Outbox::RepublishPending(
             store,
             [](uint64_t seq, std::string_view stored)
                 -> absl::StatusOr<std::vector<OutboxMessage>> {
               v1::LedgerRecord record;
               if (!record.ParseFromString(std::string(stored))) {
                 return absl::DataLossError("the record does not parse");
               }
               return LedgerMessages(std::string(stored), seq,
                                     GraphEpoch(record.epoch()));
             })
      .status();
}

}  // namespace flowsched::graph_manager
