#pragma once

// Publishes records that a service could not use, with the reason, to the
// dead-letter topic as flowsched.v1.DeadLetter.

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "services/bus/consumer.h"
#include "services/bus/producer.h"
#include "services/common/clock.h"

namespace flowsched::bus {

class DeadLetterPublisher {
 public:
  // `producer` and `clock` must outlive the publisher; a null clock means
  // the system clock (the clock stamps rejected_time_us).
  DeadLetterPublisher(Producer& producer, std::string topic,
                      std::string service, const Clock* clock = nullptr);

  // Produces the DeadLetter keyed "<topic>/<partition>" of the original, so
  // that letters from one partition stay in order. Asynchronous like
  // Producer::Produce: delivery is confirmed by Producer::Flush.
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
