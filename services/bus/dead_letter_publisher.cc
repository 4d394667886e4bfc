#include "services/bus/dead_letter_publisher.h"

#include <utility>

#include "fmt/format.h"
#include "services/common/status_macros.h"

namespace flowsched::bus {
namespace {

const Clock& SystemClockInstance() {
  static const SystemClock clock;
  return clock;
}

}  // namespace

v1::DeadLetter MakeDeadLetter(const Record& original,
                              const absl::Status& reason,
                              std::string_view service,
                              int64_t rejected_time_us) {
  v1::DeadLetter letter;
  letter.set_topic(original.topic);
  letter.set_partition(original.partition);
  letter.set_offset(original.offset);
  letter.set_key(original.key.substr(0, kDeadLetterMaxKeyBytes));
  letter.set_key_size(original.key.size());
  letter.set_original(original.value.substr(0, kDeadLetterMaxOriginalBytes));
  letter.set_original_size(original.value.size());
  letter.set_reason(std::string(reason.message()));
  letter.set_code(absl::StatusCodeToString(reason.code()));
  letter.set_service(std::string(service));
  letter.set_rejected_time_us(rejected_time_us);
  return letter;
}

std::string DeadLetterPartitionKey(const v1::DeadLetter& letter) {
  return fmt::format("{}/{}", letter.topic(), letter.partition());
}

DeadLetterPublisher::DeadLetterPublisher(Producer& producer, std::string topic,
                                         std::string service,
                                         const Clock* clock)
    : producer_(producer),
      topic_(std::move(topic)),
      service_(std::move(service)),
      clock_(clock != nullptr ? *clock : SystemClockInstance()) {}

absl::Status DeadLetterPublisher::Publish(const Record& original,
                                          const absl::Status& reason) {
  const v1::DeadLetter letter =
      MakeDeadLetter(original, reason, service_, clock_.NowMicros());
  std::string bytes;
  if (!letter.SerializeToString(&bytes)) {
    return absl::InternalError("DeadLetter: protobuf serialization failed");
  }
  FLOWSCHED_RETURN_IF_ERROR(producer_.Produce(
      topic_, kAnyPartition, DeadLetterPartitionKey(letter), bytes));
  published_.fetch_add(1);
  return absl::OkStatus();
}

}  // namespace flowsched::bus
