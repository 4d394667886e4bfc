#pragma once

// Publishes records that a service could not use, with the reason, to the
// dead-letter topic as flowsched.v1.DeadLetter.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "flowsched/v1/dead_letter.pb.h"
#include "services/bus/consumer.h"
#include "services/bus/producer.h"
#include "services/common/clock.h"

namespace flowsched::bus {

// The letter for `original`, rejected by `service` at `rejected_time_us`,
// with at most the first kDeadLetterMaxKeyBytes of its key and
// kDeadLetterMaxOriginalBytes of its value (and both full sizes), so that
// the letter always fits in one message even when the original nearly
// filled one.
inline constexpr size_t kDeadLetterMaxKeyBytes = 4 * 1024;
inline constexpr size_t kDeadLetterMaxOriginalBytes = 512 * 1024;
v1::DeadLetter MakeDeadLetter(const Record& original,
                              const absl::Status& reason,
                              std::string_view service,
                              int64_t rejected_time_us);
// The Kafka key of a letter, "<topic>/<partition>" of its original, so that
// letters about one partition stay in order.
std::string DeadLetterPartitionKey(const v1::DeadLetter& letter);

class DeadLetterPublisher {
 public:
  // `producer` and `clock` must outlive the publisher; a null clock means
  // the system clock (the clock stamps rejected_time_us).
  DeadLetterPublisher(Producer& producer, std::string topic,
                      std::string service, const Clock* clock = nullptr);

  // Produces MakeDeadLetter(original, reason, ...) keyed by
  // DeadLetterPartitionKey. Asynchronous like Producer::Produce: delivery is
  // confirmed by Producer::Flush. (The graph manager stages its letters in
  // RocksDB first: graph_manager/dead_letter_outbox.h.)
  absl::Status Publish(const Record& original, const absl::Status& reason);

  // Letters handed to the producer so far.
  [[nodiscard]] uint64_t published() const { return published_.load(); }

 private:
  Producer& producer_;
  const std::string topic_;
  const std::string service_;
  const Clock& clock_;
  std::atomic<uint64_t> published_{0};
};

}  // namespace flowsched::bus
