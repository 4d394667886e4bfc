#include "services/core/checked_extraction.h"

#include <system_error>
#include <thread>
#include <utility>

#include "services/common/clock.h"
#include "services/solver/flow_checker.h"

namespace flowsched::core {

CheckedPlacements CheckAndExtract(const solver::McmfProblem& problem,
                                  const solver::McmfSolution& solution,
                                  const flow::FlowNetwork& network,
                                  const std::vector<int64_t>& flow_by_slot) {
  CheckedPlacements out;
  const int64_t start = SteadyMicros();
  absl::Status checked;
  const auto check = [&] {
    const int64_t check_start = SteadyMicros();
    checked = solver::CheckOptimalFlow(problem, solution);
    out.check_ms = SteadyMillisSince(check_start);
  };
  // A process out of threads still checks, one step after the other,
  // instead of dying on the exception.
  std::thread checker;
  try {
    checker = std::thread(check);
  } catch (const std::system_error&) {
    check();
  }
  absl::StatusOr<std::vector<flow::TaskPlacement>> extracted =
      flow::ExtractPlacements(network, flow_by_slot);
  out.extract_ms = SteadyMillisSince(start);
  if (checker.joinable()) checker.join();
  out.wall_ms = SteadyMillisSince(start);
  if (!checked.ok()) {
    out.verdict = std::move(checked);
  } else if (!extracted.ok()) {
    out.verdict = extracted.status();
  } else {
    out.placements = std::move(*extracted);
  }
  return out;
}

}  // namespace flowsched::core
