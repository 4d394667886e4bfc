#pragma once

// Quincy's running cost (SOSP 2009 section 4.2 and Appendix): a running
// task's arc to its own computer costs gamma = d* - theta, its data cost
// there less the time it has run (1024 units a second, the paper's
// p* = theta), and `stay_bonus` units less again: theta is 0 when a task
// starts, so without it a task that just started could move to any
// computer of equal data cost at no price, and a solver from scratch
// breaks such ties arbitrarily. The cost never goes below -2 * cap (the
// paper's Omega): a task that ran that long is never preempted
// (starvation freedom), and costs stay in the solver's range.
//
// theta is priced in steps, so a task's arc changes when its priced theta
// steps, not every round: steps of step_us for the first 2^(bits + 1)
// steps, then doubling, so theta keeps `bits` significant bits past that
// (3: within 1/8) and a task is re-priced about 2^bits times per doubling
// of its runtime. Each step is a power of two times step_us, so the priced
// theta never decreases, and it is a pure function of theta: a network
// built from scratch at any time equals the refreshed one.

#include <cstdint>

namespace flowsched::flow {

class RunningTimeTerm {
 public:
  RunningTimeTerm(int64_t step_us, int bits, int64_t cap, int64_t stay_bonus)
      : step_us_(step_us), bits_(bits), cap_(cap), stay_bonus_(stay_bonus) {}

  // gamma for a task whose data cost on its computer is `data_cost` and
  // that has run `run_us`.
  [[nodiscard]] int64_t Cost(int64_t data_cost, int64_t run_us) const;
  // theta as Cost prices it, and the smallest theta above `run_us` that is
  // priced differently.
  [[nodiscard]] int64_t PricedRunMicros(int64_t run_us) const;
  [[nodiscard]] int64_t NextRunPriceMicros(int64_t run_us) const;
  // The microseconds of running after which Cost(data_cost, .) next
  // changes, or kNever if it is at its floor for good.
  static constexpr int64_t kNever = INT64_MAX;
  [[nodiscard]] int64_t NextChangeMicros(int64_t data_cost,
                                         int64_t run_us) const;

 private:
  // The step theta is priced in at `run_us`.
  [[nodiscard]] int64_t Step(int64_t run_us) const;

  int64_t step_us_;
  int bits_;
  int64_t cap_;
  int64_t stay_bonus_;
};

}  // namespace flowsched::flow
