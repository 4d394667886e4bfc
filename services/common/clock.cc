#include "services/common/clock.h"

#include <chrono>

namespace flowsched {

int64_t SystemClock::NowMicros() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t SteadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double SteadyMillisSince(int64_t start_us) {
  return static_cast<double>(SteadyMicros() - start_us) / 1000.0;
}

}  // namespace flowsched
