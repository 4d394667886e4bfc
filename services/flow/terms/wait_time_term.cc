#include "services/flow/terms/wait_time_term.h"

#include "services/flow/terms/quincy_units.h"

namespace flowsched::flow {

int64_t WaitTimeTerm::Cost(int64_t wait_us) const {
  return quincy_units::RoundToUnits(omega_ * quincy_units::kUnitsPerPaperUnit *
                                        static_cast<double>(wait_us) /
                                        quincy_units::kMicrosPerSecond,
                                    cap_);
}

}  // namespace flowsched::flow
