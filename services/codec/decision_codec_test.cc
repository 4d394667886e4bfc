#include "services/codec/decision_codec.h"

#include "gtest/gtest.h"

namespace flowsched::codec {
namespace {

TEST(DecisionCodecTest, RoundTripsEveryAction) {
  for (core::Action action :
       {core::Action::kPlace, core::Action::kPreempt, core::Action::kMigrate,
        core::Action::kUnspecified}) {
    const core::Decision decision{TaskId(7), JobId(3), MachineId(9),
                                  MachineId(4), action};
    v1::PlacementDecision message;
    EncodeDecision(decision, message);
    EXPECT_EQ(DecodeDecision(message), decision);
  }
}

TEST(DecisionCodecTest, UnknownWireActionIsUnspecified) {
  v1::PlacementDecision message;
  message.set_task_id(1);
  message.set_action(static_cast<v1::Action>(99));
  EXPECT_EQ(DecodeDecision(message).action, core::Action::kUnspecified);
}

}  // namespace
}  // namespace flowsched::codec
