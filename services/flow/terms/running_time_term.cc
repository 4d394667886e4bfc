#include "services/flow/terms/running_time_term.h"

#include <algorithm>

#include "services/flow/terms/quincy_units.h"

namespace flowsched::flow {

int64_t RunningTimeTerm::Step(int64_t run_us) const {
  const int64_t base = std::max<int64_t>(1, step_us_);
  int64_t step = base;
  const int bits = std::clamp(bits_, 0, 62);
  while (step <= INT64_MAX / 2 && run_us / (step * 2) >= (int64_t{1} << bits)) {
    step *= 2;
  }
  return step;
}

int64_t RunningTimeTerm::PricedRunMicros(int64_t run_us) const {
  if (run_us <= 0) return 0;
  const int64_t step = Step(run_us);
  return run_us / step * step;
}

int64_t RunningTimeTerm::NextRunPriceMicros(int64_t run_us) const {
  if (run_us < 0) return 0;
  const int64_t step = Step(run_us);
  return run_us / step * step + step;
}

int64_t RunningTimeTerm::Cost(int64_t data_cost, int64_t run_us) const {
  run_us = PricedRunMicros(run_us);
  const int64_t floor = -2 * cap_;
  const int64_t run_cost = quincy_units::RoundToUnits(
      quincy_units::kUnitsPerPaperUnit * static_cast<double>(run_us) /
          quincy_units::kMicrosPerSecond,
      3 * cap_);
  return std::max(floor, data_cost - run_cost - stay_bonus_);
}

int64_t RunningTimeTerm::NextChangeMicros(int64_t data_cost,
                                          int64_t run_us) const {
  if (Cost(data_cost, run_us) <= -2 * cap_) return kNever;
  return NextRunPriceMicros(run_us) - run_us;
}

}  // namespace flowsched::flow
