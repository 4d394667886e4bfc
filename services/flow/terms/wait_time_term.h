#pragma once

// Quincy's wait cost (SOSP 2009 section 4.2, upsilon = omega * nu): what a
// waiting task's arc to its job's unscheduled node costs once it has
// waited `wait_us` in all. omega is in paper units per second
// (quincy_units.h: 0.5 is 512 units a second), at microsecond resolution,
// capped at `cap` (the paper's Omega). A pure function of the wait, so a
// network built from scratch at any time equals a refreshed one.

#include <cstdint>

namespace flowsched::flow {

class WaitTimeTerm {
 public:
  WaitTimeTerm(double omega, int64_t cap) : omega_(omega), cap_(cap) {}
  [[nodiscard]] int64_t Cost(int64_t wait_us) const;

 private:
  double omega_;
  int64_t cap_;
};

}  // namespace flowsched::flow
