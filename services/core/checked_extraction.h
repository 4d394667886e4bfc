#pragma once

// A round's last step before anything is published: the optimality check of
// the solution (guarantee 6) and the extraction of placements from its flow.
// Both only read, and different data (the exported problem and solution;
// the replica network and its flow per slot), so they run side by side on
// two threads and a round costs the longer of the two. For rounds solved
// from scratch; a repaired round is certified incrementally instead
// (IncrementalMirror::Certify).

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "services/flow/flow_network.h"
#include "services/flow/placement_extractor.h"
#include "services/solver/mcmf_problem.h"

namespace flowsched::core {

struct CheckedPlacements {
  // The checker's verdict if it failed, else the extraction's. Placements
  // are meaningful only when it is OK.
  absl::Status verdict;
  std::vector<flow::TaskPlacement> placements;
  double check_ms = 0;    // the checker alone
  double extract_ms = 0;  // the extraction alone
  double wall_ms = 0;     // both, side by side
};

CheckedPlacements CheckAndExtract(const solver::McmfProblem& problem,
                                  const solver::McmfSolution& solution,
                                  const flow::FlowNetwork& network,
                                  const std::vector<int64_t>& flow_by_slot);

}  // namespace flowsched::core
