#include "services/codec/gang_codec.h"

namespace flowsched::codec {

void EncodeGangs(std::span<const core::GangRequirement> gangs,
                 v1::SolverRound& round) {
  round.clear_gangs();
  for (const core::GangRequirement& gang : gangs) {
    v1::GangRequirement* out = round.add_gangs();
    out->set_job_id(gang.job.value());
    out->set_min_members(gang.min_members);
    out->set_need(gang.need);
    out->set_hold(gang.hold);
  }
}

std::vector<core::GangRequirement> DecodeGangs(const v1::SolverRound& round) {
  std::vector<core::GangRequirement> gangs;
  gangs.reserve(static_cast<size_t>(round.gangs_size()));
  for (const v1::GangRequirement& gang : round.gangs()) {
    gangs.push_back(
        {JobId(gang.job_id()), gang.min_members(), gang.need(), gang.hold()});
  }
  return gangs;
}

}  // namespace flowsched::codec
