#pragma once

// Time source injected into services so that tests and replays can control
// it. Only main.cc picks the system clock.

#include <cstdint>

namespace flowsched {

class Clock {
 public:
  virtual ~Clock() = default;
  // Microseconds since the Unix epoch.
  [[nodiscard]] virtual int64_t NowMicros() const = 0;
};

class SystemClock final : public Clock {
 public:
  [[nodiscard]] int64_t NowMicros() const override;
};

// Steady (monotonic) microseconds, for measuring durations.
[[nodiscard]] int64_t SteadyMicros();

// Milliseconds elapsed since `start_us`, an earlier SteadyMicros() reading.
[[nodiscard]] double SteadyMillisSince(int64_t start_us);

}  // namespace flowsched
