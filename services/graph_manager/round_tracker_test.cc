#include "services/graph_manager/round_tracker.h"

#include <cstdint>
#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace flowsched::graph_manager {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr core::CutOptions kClock{};
constexpr core::CutOptions kEveryTwoEvents{.every_events = 2};
constexpr int64_t kMs = 1000;  // steady microseconds

// Cuts round `id` at `now_us` and publishes it successfully.
void CutAndPublish(RoundTracker& rounds, uint64_t id, int64_t now_us) {
  rounds.Cut(RoundId(id), GraphEpoch(7), now_us);
  rounds.OnPublished(/*ok=*/true, now_us);
}

TEST(RoundTrackerTest, StartsIdleAndOwesASnapshot) {
  RoundTracker rounds(kClock);
  EXPECT_EQ(rounds.in_flight(), nullptr);
  EXPECT_TRUE(rounds.need_snapshot());
  // The snapshot alone makes a round due in clock mode.
  EXPECT_TRUE(rounds.CutDue(/*changes_pending=*/false, 0));
  EXPECT_FALSE(rounds.EventsPaused());
}

TEST(RoundTrackerTest, ACutRoundIsInFlightUntilApplied) {
  RoundTracker rounds(kClock);
  rounds.Cut(RoundId(3), GraphEpoch(7), 10 * kMs);
  ASSERT_NE(rounds.in_flight(), nullptr);
  EXPECT_EQ(rounds.in_flight()->id, RoundId(3));
  EXPECT_EQ(rounds.in_flight()->epoch, GraphEpoch(7));
  EXPECT_EQ(rounds.in_flight()->started_steady_us, 10 * kMs);
  rounds.OnPublished(/*ok=*/true, 12 * kMs);
  EXPECT_EQ(rounds.in_flight()->sent_steady_us, 12 * kMs);
  EXPECT_FALSE(rounds.need_snapshot());
  EXPECT_FALSE(rounds.CutDue(/*changes_pending=*/true, 13 * kMs));
  rounds.OnApplied(/*changed_state=*/true);
  EXPECT_EQ(rounds.in_flight(), nullptr);
  // Clock mode: only network changes make the next round due.
  EXPECT_FALSE(rounds.CutDue(/*changes_pending=*/false, 14 * kMs));
  EXPECT_TRUE(rounds.CutDue(/*changes_pending=*/true, 14 * kMs));
}

TEST(RoundTrackerTest, HoldsTheFirstOffsetPerPartitionAndReleasesOnApply) {
  RoundTracker rounds(kClock);
  rounds.HoldPlacementOffset(0, 5);  // nothing in flight: not held
  CutAndPublish(rounds, 1, 0);
  EXPECT_THAT(rounds.in_flight()->held_placement_offsets, IsEmpty());
  rounds.HoldPlacementOffset(0, 40);
  rounds.HoldPlacementOffset(1, 17);
  rounds.HoldPlacementOffset(0, 41);
  EXPECT_THAT(rounds.in_flight()->held_placement_offsets,
              ElementsAre(Pair(0, 40), Pair(1, 17)));
  rounds.OnApplied(/*changed_state=*/false);
  EXPECT_EQ(rounds.in_flight(), nullptr);
  // The next round holds afresh.
  CutAndPublish(rounds, 2, 0);
  EXPECT_THAT(rounds.in_flight()->held_placement_offsets, IsEmpty());
}

TEST(RoundTrackerTest, TimeoutAbandonsTheRoundAndReCutsItAsASnapshot) {
  RoundTracker rounds(kClock);
  CutAndPublish(rounds, 1, 100 * kMs);
  rounds.HoldPlacementOffset(0, 40);
  EXPECT_FALSE(rounds.TimedOut(100 * kMs + 14'999 * kMs, 15'000));
  ASSERT_TRUE(rounds.TimedOut(100 * kMs + 15'000 * kMs, 15'000));
  rounds.Abandon();
  EXPECT_EQ(rounds.in_flight(), nullptr);  // held offsets released with it
  EXPECT_FALSE(rounds.TimedOut(1'000'000 * kMs, 15'000));
  EXPECT_TRUE(rounds.need_snapshot());
  EXPECT_TRUE(rounds.CutDue(/*changes_pending=*/false, 15'200 * kMs));
}

TEST(RoundTrackerTest, DeterministicTimeoutCutsAgainAtTheSamePlace) {
  RoundTracker rounds(kEveryTwoEvents);
  rounds.OnEvent(false);
  ASSERT_TRUE(rounds.OnEvent(false));
  EXPECT_TRUE(rounds.EventsPaused());
  CutAndPublish(rounds, 1, 0);
  EXPECT_TRUE(rounds.EventsPaused());
  ASSERT_TRUE(rounds.TimedOut(15'000 * kMs, 15'000));
  rounds.Abandon();
  EXPECT_TRUE(rounds.cut_policy().cut_pending());
  EXPECT_TRUE(rounds.EventsPaused());
  EXPECT_TRUE(rounds.need_snapshot());
  EXPECT_TRUE(rounds.CutDue(/*changes_pending=*/false, 15'000 * kMs));
}

TEST(RoundTrackerTest, DeterministicRoundsPauseAndResumeEvents) {
  RoundTracker rounds(kEveryTwoEvents);
  EXPECT_FALSE(rounds.OnEvent(false));
  EXPECT_FALSE(rounds.EventsPaused());
  // Network changes alone cut nothing in deterministic modes.
  EXPECT_FALSE(rounds.CutDue(/*changes_pending=*/true, 0));
  ASSERT_TRUE(rounds.OnEvent(false));
  EXPECT_TRUE(rounds.EventsPaused());
  EXPECT_TRUE(rounds.CutDue(/*changes_pending=*/false, 0));
  CutAndPublish(rounds, 1, 0);
  EXPECT_TRUE(rounds.EventsPaused());
  // A round that changed the state: another one at once, events still
  // paused.
  rounds.OnApplied(/*changed_state=*/true);
  EXPECT_TRUE(rounds.EventsPaused());
  EXPECT_TRUE(rounds.CutDue(/*changes_pending=*/false, 0));
  CutAndPublish(rounds, 2, 0);
  // One that changed nothing: events flow again, nothing due.
  rounds.OnApplied(/*changed_state=*/false);
  EXPECT_FALSE(rounds.EventsPaused());
  EXPECT_FALSE(rounds.CutDue(/*changes_pending=*/true, 0));
}

TEST(RoundTrackerTest, AbandonWithoutARoundInFlightOnlyAsksForASnapshot) {
  RoundTracker rounds(kEveryTwoEvents);
  CutAndPublish(rounds, 1, 0);
  rounds.OnApplied(/*changed_state=*/false);
  ASSERT_FALSE(rounds.need_snapshot());
  rounds.Abandon();  // a resync request between rounds
  EXPECT_TRUE(rounds.need_snapshot());
  EXPECT_FALSE(rounds.cut_policy().cut_pending());
  EXPECT_FALSE(rounds.EventsPaused());
}

TEST(RoundTrackerTest, FailedPublicationBacksOffAndAsksForASnapshot) {
  RoundTracker rounds(kClock);
  rounds.Cut(RoundId(1), GraphEpoch(7), 0);
  EXPECT_EQ(rounds.publish_backoff_ms(), 100);
  rounds.OnPublished(/*ok=*/false, 1'000 * kMs);
  // Still in flight: parts may have reached the solver.
  ASSERT_NE(rounds.in_flight(), nullptr);
  EXPECT_EQ(rounds.in_flight()->sent_steady_us, 1'000 * kMs);
  EXPECT_TRUE(rounds.need_snapshot());
  EXPECT_EQ(rounds.publish_backoff_ms(), 200);
  rounds.Abandon();
  EXPECT_FALSE(rounds.CutDue(/*changes_pending=*/true, 1'099 * kMs));
  EXPECT_TRUE(rounds.CutDue(/*changes_pending=*/true, 1'100 * kMs));
  // Doubling up to 5 s; a success starts again at 100 ms.
  for (int i = 0; i < 8; ++i) {
    rounds.Cut(RoundId(2 + i), GraphEpoch(7), 0);
    rounds.OnPublished(/*ok=*/false, 0);
  }
  EXPECT_EQ(rounds.publish_backoff_ms(), 5000);
  rounds.OnPublished(/*ok=*/true, 0);
  EXPECT_EQ(rounds.publish_backoff_ms(), 100);
  EXPECT_FALSE(rounds.need_snapshot());
}

TEST(RoundTrackerTest, ARestoredRoundIsWaitedForFromTheStart) {
  v1::GraphManagerMeta meta;
  meta.set_in_flight_round_id(9);
  meta.set_in_flight_graph_epoch(4);
  RoundTracker rounds(kClock);
  rounds.Restore(meta);
  rounds.AddSyncMicros(123);
  rounds.OnStart(50 * kMs);
  ASSERT_NE(rounds.in_flight(), nullptr);
  EXPECT_EQ(rounds.in_flight()->id, RoundId(9));
  EXPECT_EQ(rounds.in_flight()->epoch, GraphEpoch(4));
  EXPECT_EQ(rounds.in_flight()->sent_steady_us, 50 * kMs);
  EXPECT_EQ(rounds.in_flight()->started_steady_us, 50 * kMs);
  EXPECT_EQ(rounds.TakeSyncMicros(), 0);  // the catch-up's belong to none
  EXPECT_FALSE(rounds.TimedOut(50 * kMs + 14'999 * kMs, 15'000));
}

TEST(RoundTrackerTest, MapsToAndFromTheStoredMeta) {
  v1::GraphManagerMeta meta;
  meta.set_epoch(8);  // not the tracker's: left alone
  meta.set_events_since_cut(1);
  RoundTracker rounds(kEveryTwoEvents);
  rounds.Restore(meta);
  ASSERT_TRUE(rounds.OnEvent(false));  // the stored count goes on
  rounds.StoreIn(meta);
  EXPECT_EQ(meta.events_since_cut(), 0u);
  EXPECT_TRUE(meta.cut_pending());
  EXPECT_EQ(meta.in_flight_round_id(), 0u);
  rounds.Cut(RoundId(5), GraphEpoch(8), 0);
  rounds.StoreIn(meta);
  EXPECT_FALSE(meta.cut_pending());
  EXPECT_EQ(meta.in_flight_round_id(), 5u);
  EXPECT_EQ(meta.in_flight_graph_epoch(), 8u);
  EXPECT_EQ(meta.epoch(), 8u);

  RoundTracker restored(kEveryTwoEvents);
  restored.Restore(meta);
  ASSERT_NE(restored.in_flight(), nullptr);
  EXPECT_EQ(restored.in_flight()->id, RoundId(5));
  EXPECT_TRUE(restored.EventsPaused());

  rounds.Abandon();  // timed out: both fields cleared
  rounds.StoreIn(meta);
  EXPECT_EQ(meta.in_flight_round_id(), 0u);
  EXPECT_EQ(meta.in_flight_graph_epoch(), 0u);
  EXPECT_TRUE(meta.cut_pending());
}

TEST(RoundTrackerTest, SyncTimeIsTakenOncePerRound) {
  RoundTracker rounds(kClock);
  rounds.AddSyncMicros(30);
  rounds.AddSyncMicros(12);
  EXPECT_EQ(rounds.TakeSyncMicros(), 42);
  EXPECT_EQ(rounds.TakeSyncMicros(), 0);
}

}  // namespace
}  // namespace flowsched::graph_manager
