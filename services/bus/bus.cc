#include "services/bus/bus.h"

#include <utility>

#include "services/bus/consumer.h"
#include "services/bus/producer.h"
#include "services/common/status_macros.h"

namespace flowsched::bus {

absl::StatusOr<std::unique_ptr<RecordSource>> KafkaBus::NewSource(
    const std::string& group_id) {
  FLOWSCHED_ASSIGN_OR_RETURN(std::unique_ptr<Consumer> consumer,
                             Consumer::Create(options_, group_id));
  return std::unique_ptr<RecordSource>(std::move(consumer));
}

absl::StatusOr<std::unique_ptr<RecordSink>> KafkaBus::NewSink() {
  FLOWSCHED_ASSIGN_OR_RETURN(std::unique_ptr<Producer> producer,
                             Producer::Create(options_));
  return std::unique_ptr<RecordSink>(std::move(producer));
}

}  // namespace flowsched::bus
