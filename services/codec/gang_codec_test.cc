#include "services/codec/gang_codec.h"

#include <vector>

#include "gtest/gtest.h"
#include "services/codec/decision_codec.h"

namespace flowsched::codec {
namespace {

TEST(GangCodecTest, RoundTripsTheGangsOfARound) {
  const std::vector<core::GangRequirement> gangs = {{JobId(3), 64, 64, false},
                                                    {JobId(8), 4, 0, false},
                                                    {JobId(9), 2, 2, true}};
  v1::SolverRound round;
  EncodeGangs(gangs, round);
  EXPECT_EQ(DecodeGangs(round), gangs);
  EncodeGangs({}, round);
  EXPECT_TRUE(DecodeGangs(round).empty());
}

TEST(GangCodecTest, TheMarkerTravelsWithTheDecision) {
  core::Decision decision{
      TaskId(7), JobId(3), MachineId(9), MachineId(0), core::Action::kPlace,
      64};
  v1::PlacementDecision message;
  EncodeDecision(decision, message);
  EXPECT_EQ(message.gang_job_id(), 3u);
  EXPECT_EQ(message.gang_min_members(), 64u);
  EXPECT_EQ(DecodeDecision(message), decision);
  decision.gang_min_members = 0;
  message.Clear();
  EncodeDecision(decision, message);
  EXPECT_EQ(message.gang_job_id(), 0u);
}

}  // namespace
}  // namespace flowsched::codec
