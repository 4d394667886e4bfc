#include "services/core/cut_policy.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace flowsched::core {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Feeds `ticks` (true: a Tick event, false: any other) and returns the
// 1-based positions whose event made a cut due; each cut is made at once
// (no round left in flight), as the graph manager does before it consumes
// the next event.
std::vector<int> CutPoints(CutPolicy& policy, const std::vector<bool>& ticks) {
  std::vector<int> cuts;
  for (size_t i = 0; i < ticks.size(); ++i) {
    if (policy.OnEvent(ticks[i])) {
      EXPECT_TRUE(policy.RoundDue(/*network_changed=*/false,
                                  /*in_flight=*/false));
      EXPECT_TRUE(policy.ShouldPauseEvents(/*in_flight=*/false));
      policy.OnCut();
      policy.OnRoundApplied(/*changed_state=*/false);
      cuts.push_back(static_cast<int>(i) + 1);
    }
  }
  return cuts;
}

// Events 1..9, Ticks at 4 and 5.
const std::vector<bool> kEvents = {false, false, false, true, true,
                                   false, false, false, false};

TEST(CutPolicyTest, ClockModeCutsWhenTheNetworkChangedAndNoRoundIsInFlight) {
  CutPolicy policy(CutOptions{});
  EXPECT_FALSE(policy.deterministic());
  EXPECT_THAT(CutPoints(policy, kEvents), IsEmpty());
  EXPECT_EQ(policy.events_since_cut(), 0u);  // clock mode counts nothing
  EXPECT_TRUE(policy.RoundDue(/*network_changed=*/true, /*in_flight=*/false));
  EXPECT_FALSE(policy.RoundDue(/*network_changed=*/true, /*in_flight=*/true));
  EXPECT_FALSE(policy.RoundDue(/*network_changed=*/false, /*in_flight=*/false));
  // A round that changed the state, or was abandoned, makes no cut due by
  // itself: the network changes it caused do.
  policy.OnRoundApplied(/*changed_state=*/true);
  policy.OnRoundAbandoned();
  EXPECT_FALSE(policy.RoundDue(/*network_changed=*/false, /*in_flight=*/false));
  EXPECT_FALSE(policy.ShouldPauseEvents(/*in_flight=*/true));
}

TEST(CutPolicyTest, EveryNEventsCutsAfterEachNthEvent) {
  CutPolicy policy(CutOptions{.every_events = 3});
  EXPECT_TRUE(policy.deterministic());
  EXPECT_THAT(CutPoints(policy, kEvents), ElementsAre(3, 6, 9));
  EXPECT_EQ(policy.events_since_cut(), 0u);
}

TEST(CutPolicyTest, AtTicksCutsAtEachTickOnly) {
  CutPolicy policy(CutOptions{.at_ticks = true});
  EXPECT_TRUE(policy.deterministic());
  EXPECT_THAT(CutPoints(policy, kEvents), ElementsAre(4, 5));
  // The count goes on between ticks (stored, though nothing cuts on it).
  EXPECT_EQ(policy.events_since_cut(), 4u);
}

TEST(CutPolicyTest, EveryNEventsAndTicksCombineAndATickRestartsTheCount) {
  CutPolicy policy(CutOptions{.every_events = 3, .at_ticks = true});
  // 3 (count), 4 and 5 (ticks), then 8 (three events after the tick at 5).
  EXPECT_THAT(CutPoints(policy, kEvents), ElementsAre(3, 4, 5, 8));
  EXPECT_EQ(policy.events_since_cut(), 1u);
}

TEST(CutPolicyTest, NetworkChangesAloneDoNotCutInDeterministicModes) {
  CutPolicy policy(CutOptions{.every_events = 2});
  EXPECT_FALSE(policy.RoundDue(/*network_changed=*/true, /*in_flight=*/false));
  EXPECT_FALSE(policy.OnEvent(false));
  EXPECT_FALSE(policy.ShouldPauseEvents(/*in_flight=*/false));
  EXPECT_TRUE(policy.OnEvent(false));
  EXPECT_TRUE(policy.RoundDue(/*network_changed=*/false, /*in_flight=*/false));
}

TEST(CutPolicyTest, EventsPauseWhileACutIsDueOrARoundIsInFlight) {
  CutPolicy policy(CutOptions{.every_events = 1});
  EXPECT_FALSE(policy.ShouldPauseEvents(/*in_flight=*/false));
  ASSERT_TRUE(policy.OnEvent(false));
  EXPECT_TRUE(policy.ShouldPauseEvents(/*in_flight=*/false));  // due
  policy.OnCut();
  EXPECT_FALSE(policy.cut_pending());
  EXPECT_TRUE(policy.ShouldPauseEvents(/*in_flight=*/true));  // in flight
  EXPECT_FALSE(policy.RoundDue(/*network_changed=*/true, /*in_flight=*/true));
  policy.OnRoundApplied(/*changed_state=*/false);
  EXPECT_FALSE(policy.ShouldPauseEvents(/*in_flight=*/false));  // resumed
}

TEST(CutPolicyTest, ARoundThatChangedTheStateIsFollowedByAnotherAtOnce) {
  CutPolicy policy(CutOptions{.at_ticks = true});
  ASSERT_TRUE(policy.OnEvent(/*tick=*/true));
  policy.OnCut();
  policy.OnRoundApplied(/*changed_state=*/true);
  EXPECT_TRUE(policy.cut_pending());
  EXPECT_TRUE(policy.RoundDue(/*network_changed=*/false, /*in_flight=*/false));
  EXPECT_TRUE(policy.ShouldPauseEvents(/*in_flight=*/false));
  policy.OnCut();
  policy.OnRoundApplied(/*changed_state=*/false);
  EXPECT_FALSE(policy.RoundDue(/*network_changed=*/true, /*in_flight=*/false));
  EXPECT_FALSE(policy.ShouldPauseEvents(/*in_flight=*/false));
}

TEST(CutPolicyTest, AnAbandonedRoundIsCutAgainAtTheSamePlace) {
  CutPolicy policy(CutOptions{.every_events = 2});
  policy.OnEvent(false);
  ASSERT_TRUE(policy.OnEvent(false));
  policy.OnCut();
  policy.OnRoundAbandoned();
  EXPECT_TRUE(policy.RoundDue(/*network_changed=*/false, /*in_flight=*/false));
  EXPECT_TRUE(policy.ShouldPauseEvents(/*in_flight=*/false));
  EXPECT_EQ(policy.events_since_cut(), 0u);
}

TEST(CutPolicyTest, RestoreResumesTheStoredCount) {
  CutPolicy policy(CutOptions{.every_events = 3});
  policy.Restore(/*events_since_cut=*/2, /*cut_pending=*/false);
  EXPECT_TRUE(policy.OnEvent(false));
  policy.Restore(/*events_since_cut=*/0, /*cut_pending=*/true);
  EXPECT_TRUE(policy.RoundDue(/*network_changed=*/false, /*in_flight=*/false));
  // Clock mode keeps a stored state as it is (a store written in a
  // deterministic mode) but does not act on it.
  CutPolicy clock(CutOptions{});
  clock.Restore(/*events_since_cut=*/5, /*cut_pending=*/true);
  EXPECT_FALSE(clock.RoundDue(/*network_changed=*/false, /*in_flight=*/false));
  EXPECT_FALSE(clock.ShouldPauseEvents(/*in_flight=*/false));
  EXPECT_FALSE(clock.OnEvent(/*tick=*/true));
  EXPECT_EQ(clock.events_since_cut(), 5u);
  EXPECT_TRUE(clock.cut_pending());
}

}  // namespace
}  // namespace flowsched::core
