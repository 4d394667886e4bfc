#pragma once

// core::GangRequirement <-> v1::GangRequirement, the gang list a
// SolverRound carries (rounds.proto). Total: any message decodes (a
// requirement of an unknown job matches no task and changes nothing).

#include <span>
#include <vector>

#include "flowsched/v1/rounds.pb.h"
#include "services/core/gang_rule.h"

namespace flowsched::codec {

void EncodeGangs(std::span<const core::GangRequirement> gangs,
                 v1::SolverRound& round);
std::vector<core::GangRequirement> DecodeGangs(const v1::SolverRound& round);

}  // namespace flowsched::codec
