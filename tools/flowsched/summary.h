#pragma once

// The readable summary `flowsched status` and `flowsched demo` print.

#include <ostream>

#include "flowsched/v1/status.pb.h"

namespace flowsched::tools {

void PrintSummary(const v1::GraphManagerStatus& status, std::ostream& out);

}  // namespace flowsched::tools
