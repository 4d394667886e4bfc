#include "services/core/cut_policy.h"

namespace flowsched::core {

void CutPolicy::Restore(uint64_t events_since_cut, bool cut_pending) {
  events_since_cut_ = events_since_cut;
  cut_pending_ = cut_pending;
}

bool CutPolicy::OnEvent(bool tick) {
  if (!deterministic()) return false;
  ++events_since_cut_;
  if ((options_.at_ticks && tick) ||
      (options_.every_events > 0 &&
       events_since_cut_ >= options_.every_events)) {
    events_since_cut_ = 0;
    cut_pending_ = true;
    return true;
  }
  return false;
}

void CutPolicy::OnRoundApplied(bool changed_state) {
  if (deterministic() && changed_state) cut_pending_ = true;
}

void CutPolicy::OnRoundAbandoned() {
  if (deterministic()) cut_pending_ = true;
}

bool CutPolicy::RoundDue(bool network_changed, bool in_flight) const {
  if (in_flight) return false;
  return deterministic() ? cut_pending_ : network_changed;
}

}  // namespace flowsched::core
