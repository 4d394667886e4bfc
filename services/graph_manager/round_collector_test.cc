#include "services/graph_manager/round_collector.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace flowsched::graph_manager {
namespace {

v1::PlacementRecord Decision(uint64_t round, uint64_t solver_epoch,
                             uint64_t task, uint64_t graph_epoch = 3) {
  v1::PlacementRecord r;
  r.mutable_decision()->set_round_id(round);
  r.mutable_decision()->set_epoch(solver_epoch);
  r.mutable_decision()->set_graph_epoch(graph_epoch);
  r.mutable_decision()->set_task_id(task);
  return r;
}

v1::PlacementRecord Marker(uint64_t round, uint64_t solver_epoch,
                           uint32_t partition, uint32_t total,
                           uint64_t graph_epoch = 3) {
  v1::PlacementRecord r;
  auto* m = r.mutable_round_complete();
  m->set_round_id(round);
  m->set_epoch(solver_epoch);
  m->set_graph_epoch(graph_epoch);
  m->set_partition(partition);
  m->set_total_decisions(total);
  m->set_partition_count(2);
  return r;
}

// The task ids of the completed answer, in the order collected.
std::vector<uint64_t> CompleteTasks(const RoundCollector& c) {
  std::vector<uint64_t> tasks;
  for (const auto& decision : c.complete_decisions()) {
    tasks.push_back(decision.task_id());
  }
  return tasks;
}

TEST(RoundCollectorTest, CompletesWhenEveryPartitionIsClosed) {
  RoundCollector c;
  c.Expect(RoundId(5), GraphEpoch(3), 2);
  EXPECT_FALSE(c.Add(0, 0, Decision(5, 9, 1)));
  EXPECT_FALSE(c.Add(0, 1, Marker(5, 9, 0, 2)));
  EXPECT_FALSE(c.Add(1, 0, Decision(5, 9, 2)));
  EXPECT_TRUE(c.Add(1, 1, Marker(5, 9, 1, 2)));
  EXPECT_EQ(c.complete_decisions().size(), 2u);
  EXPECT_FALSE(c.expecting());
}

TEST(RoundCollectorTest, IgnoresOtherRoundsAndEpochs) {
  RoundCollector c;
  c.Expect(RoundId(5), GraphEpoch(3), 2);
  EXPECT_FALSE(c.Add(0, 0, Decision(4, 9, 1)));                     // old round
  EXPECT_FALSE(c.Add(0, 1, Decision(5, 9, 1, /*graph_epoch=*/2)));  // zombie
  EXPECT_FALSE(c.Add(0, 2, Marker(5, 9, 0, 0)));
  EXPECT_TRUE(c.Add(1, 0, Marker(5, 9, 1, 0)));
  EXPECT_TRUE(c.complete_decisions().empty());
  EXPECT_EQ(c.ignored_records(), 2u);
}

TEST(RoundCollectorTest, MissingDecisionsMakeTheAnswerUnusable) {
  RoundCollector c;
  c.Expect(RoundId(5), GraphEpoch(3), 2);
  EXPECT_FALSE(c.Add(0, 0, Marker(5, 9, 0, 3)));
  EXPECT_FALSE(c.Add(1, 0, Decision(5, 9, 2)));
  EXPECT_FALSE(c.Add(1, 1, Marker(5, 9, 1, 3)));
  EXPECT_TRUE(c.expecting());  // still waiting; times out upstream
}

TEST(RoundCollectorTest, TwoSolversNeverMix) {
  RoundCollector c;
  c.Expect(RoundId(5), GraphEpoch(3), 2);
  EXPECT_FALSE(c.Add(0, 0, Decision(5, 100, 1)));
  EXPECT_FALSE(c.Add(0, 1, Decision(5, 200, 7)));
  EXPECT_FALSE(c.Add(0, 2, Marker(5, 200, 0, 1)));
  EXPECT_FALSE(c.Add(0, 3, Marker(5, 100, 0, 1)));
  EXPECT_TRUE(c.Add(1, 0, Marker(5, 200, 1, 1)));
  ASSERT_EQ(c.complete_decisions().size(), 1u);
  EXPECT_EQ(c.complete_decisions()[0].task_id(), 7u);
  EXPECT_FALSE(c.Add(1, 1, Marker(5, 100, 1, 1)));  // too late, ignored
}

TEST(RoundCollectorTest, MarkerFromTheWrongPartitionIsIgnored) {
  RoundCollector c;
  c.Expect(RoundId(5), GraphEpoch(3), 2);
  EXPECT_FALSE(c.Add(1, 0, Marker(5, 9, 0, 0)));
  EXPECT_FALSE(c.Add(1, 1, Marker(5, 9, 1, 0)));
  EXPECT_TRUE(c.expecting());
}

TEST(RoundCollectorTest, FencesAnswersFromOtherSolverEpochs) {
  RoundCollector c;
  c.set_solver_epoch(WorkerEpoch(9));
  c.Expect(RoundId(5), GraphEpoch(3), 2);
  // A complete answer from the old worker 8 (paused, then resumed) for the
  // very round in flight: not applied, counted as fenced.
  EXPECT_FALSE(c.Add(0, 0, Decision(5, 8, 1)));
  EXPECT_FALSE(c.Add(0, 1, Marker(5, 8, 0, 1)));
  EXPECT_FALSE(c.Add(1, 0, Marker(5, 8, 1, 1)));
  EXPECT_EQ(c.fenced_records(), 3u);
  EXPECT_TRUE(c.expecting());
  // The current worker's answer counts.
  EXPECT_FALSE(c.Add(0, 2, Decision(5, 9, 2)));
  EXPECT_FALSE(c.Add(0, 3, Marker(5, 9, 0, 1)));
  EXPECT_TRUE(c.Add(1, 1, Marker(5, 9, 1, 1)));
  ASSERT_EQ(c.complete_decisions().size(), 1u);
  EXPECT_EQ(c.complete_decisions()[0].task_id(), 2u);
  // The fence survives Expect and Clear.
  c.Expect(RoundId(6), GraphEpoch(3), 2);
  EXPECT_FALSE(c.Add(0, 4, Decision(6, 8, 1)));
  EXPECT_EQ(c.fenced_records(), 4u);
}

TEST(RoundCollectorTest, NewSolverEpochDropsPartialAnswers) {
  RoundCollector c;
  c.Expect(RoundId(5), GraphEpoch(3),
           2);  // no epoch known yet: any worker may answer
  EXPECT_FALSE(c.Add(0, 0, Decision(5, 8, 1)));
  EXPECT_FALSE(c.Add(0, 1, Marker(5, 8, 0, 1)));
  c.set_solver_epoch(WorkerEpoch(9));  // a takeover
  EXPECT_FALSE(c.Add(1, 0, Marker(5, 8, 1, 1)));
  EXPECT_EQ(c.fenced_records(), 1u);
  EXPECT_TRUE(c.expecting());
}

// A re-assignment delivers a decision and partition 0's marker again after
// partition 0 was closed: neither is taken twice, and the round completes
// with each decision once (counted twice, the answer would not match the
// markers' total and would be dropped).
TEST(RoundCollectorTest, RepeatedDecisionAndMarkerAreTakenOnce) {
  RoundCollector c;
  c.Expect(RoundId(5), GraphEpoch(3), 2);
  EXPECT_FALSE(c.Add(0, 10, Decision(5, 9, 1)));
  EXPECT_FALSE(c.Add(0, 11, Decision(5, 9, 2)));
  EXPECT_FALSE(c.Add(0, 12, Marker(5, 9, 0, 3)));
  EXPECT_FALSE(c.Add(0, 11, Decision(5, 9, 2)));
  EXPECT_FALSE(c.Add(0, 12, Marker(5, 9, 0, 3)));
  EXPECT_EQ(c.duplicate_records(), 2u);
  EXPECT_FALSE(c.Add(1, 20, Decision(5, 9, 3)));
  EXPECT_TRUE(c.Add(1, 21, Marker(5, 9, 1, 3)));
  EXPECT_THAT(CompleteTasks(c), ::testing::ElementsAre(1, 2, 3));
  EXPECT_EQ(c.duplicate_records(), 2u);
  EXPECT_EQ(c.ignored_records(), 0u);
  EXPECT_FALSE(c.expecting());
}

// Partition 1 is rewound (a seek back to its committed offset) while its
// part is still open: the records it took are re-read, then new ones
// follow. A record below the rewind point that was never taken (another
// round's) is ignored again, not counted as a duplicate.
TEST(RoundCollectorTest, RewindOfOnePartitionMidRoundCompletesTheRound) {
  RoundCollector c;
  c.Expect(RoundId(5), GraphEpoch(3), 2);
  EXPECT_FALSE(c.Add(0, 5, Decision(5, 9, 1)));
  EXPECT_FALSE(c.Add(0, 6, Decision(5, 9, 2)));
  EXPECT_FALSE(c.Add(0, 7, Marker(5, 9, 0, 4)));
  EXPECT_FALSE(c.Add(1, 2, Decision(4, 9, 8)));  // round 4's, ignored
  EXPECT_FALSE(c.Add(1, 3, Decision(5, 9, 3)));
  // Rewound to offset 2.
  EXPECT_FALSE(c.Add(1, 2, Decision(4, 9, 8)));
  EXPECT_FALSE(c.Add(1, 3, Decision(5, 9, 3)));
  EXPECT_FALSE(c.Add(1, 4, Decision(5, 9, 4)));
  EXPECT_TRUE(c.Add(1, 5, Marker(5, 9, 1, 4)));
  EXPECT_THAT(CompleteTasks(c), ::testing::ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(c.duplicate_records(), 1u);
  EXPECT_EQ(c.ignored_records(), 2u);
}

// Two workers answer on the same partition (no solver epoch known yet):
// each answer tracks the offsets it took, so a rewind is recognized for
// both and the winning answer still holds its one decision.
TEST(RoundCollectorTest, RepeatsAreTrackedPerAnswer) {
  RoundCollector c;
  c.Expect(RoundId(5), GraphEpoch(3), 2);
  EXPECT_FALSE(c.Add(0, 0, Decision(5, 100, 1)));
  EXPECT_FALSE(c.Add(0, 1, Decision(5, 200, 7)));
  EXPECT_FALSE(c.Add(0, 2, Marker(5, 200, 0, 1)));
  // Rewound to offset 0.
  EXPECT_FALSE(c.Add(0, 0, Decision(5, 100, 1)));
  EXPECT_FALSE(c.Add(0, 1, Decision(5, 200, 7)));
  EXPECT_FALSE(c.Add(0, 2, Marker(5, 200, 0, 1)));
  EXPECT_FALSE(c.Add(0, 3, Marker(5, 100, 0, 1)));
  EXPECT_TRUE(c.Add(1, 0, Marker(5, 200, 1, 1)));
  EXPECT_THAT(CompleteTasks(c), ::testing::ElementsAre(7));
  EXPECT_EQ(c.duplicate_records(), 3u);
}

// Records of the round just completed, read again before the next round
// is expected: counted as duplicates, never applied a second time (the
// repeated last marker does not complete the round again).
TEST(RoundCollectorTest, RepeatAfterTheRoundCompletedIsNotAppliedAgain) {
  RoundCollector c;
  c.Expect(RoundId(5), GraphEpoch(3), 2);
  EXPECT_FALSE(c.Add(0, 0, Decision(5, 9, 1)));
  EXPECT_FALSE(c.Add(0, 1, Marker(5, 9, 0, 1)));
  EXPECT_TRUE(c.Add(1, 0, Marker(5, 9, 1, 1)));
  EXPECT_FALSE(c.Add(0, 0, Decision(5, 9, 1)));
  EXPECT_FALSE(c.Add(0, 1, Marker(5, 9, 0, 1)));
  EXPECT_FALSE(c.Add(1, 0, Marker(5, 9, 1, 1)));
  EXPECT_EQ(c.duplicate_records(), 3u);
  EXPECT_EQ(c.ignored_records(), 0u);
  EXPECT_FALSE(c.expecting());
  EXPECT_THAT(CompleteTasks(c), ::testing::ElementsAre(1));
  // A record past what the answer took is not a repeat of it.
  EXPECT_FALSE(c.Add(1, 1, Decision(5, 9, 2)));
  EXPECT_EQ(c.ignored_records(), 1u);
  EXPECT_EQ(c.duplicate_records(), 3u);
}

// A round with a repeated record completes; repeats of it read while the
// next round is collected are not collected into it, and the next round
// completes with its own decisions only.
TEST(RoundCollectorTest, RepeatsDoNotLeakIntoTheNextRound) {
  RoundCollector c;
  c.Expect(RoundId(5), GraphEpoch(3), 2);
  EXPECT_FALSE(c.Add(0, 0, Decision(5, 9, 1)));
  EXPECT_FALSE(c.Add(0, 0, Decision(5, 9, 1)));
  EXPECT_FALSE(c.Add(0, 1, Marker(5, 9, 0, 1)));
  EXPECT_TRUE(c.Add(1, 0, Marker(5, 9, 1, 1)));
  EXPECT_THAT(CompleteTasks(c), ::testing::ElementsAre(1));
  EXPECT_EQ(c.duplicate_records(), 1u);

  c.Expect(RoundId(6), GraphEpoch(3), 2);
  // Round 5's part of partition 0 read again: another round now.
  EXPECT_FALSE(c.Add(0, 0, Decision(5, 9, 1)));
  EXPECT_FALSE(c.Add(0, 1, Marker(5, 9, 0, 1)));
  EXPECT_FALSE(c.Add(0, 2, Decision(6, 9, 2)));
  EXPECT_FALSE(c.Add(0, 3, Marker(6, 9, 0, 1)));
  EXPECT_TRUE(c.Add(1, 1, Marker(6, 9, 1, 1)));
  EXPECT_THAT(CompleteTasks(c), ::testing::ElementsAre(2));
  EXPECT_EQ(c.duplicate_records(), 1u);
  EXPECT_EQ(c.ignored_records(), 2u);
}

// Offsets go with the answer: after Clear (an abandoned round) and a new
// Expect of the same round id (as after a restart), the records are taken
// again and complete the round.
TEST(RoundCollectorTest, ClearForgetsTakenOffsets) {
  RoundCollector c;
  c.Expect(RoundId(5), GraphEpoch(3), 2);
  EXPECT_FALSE(c.Add(0, 0, Decision(5, 9, 1)));
  EXPECT_FALSE(c.Add(0, 1, Marker(5, 9, 0, 1)));
  c.Clear();
  c.Expect(RoundId(5), GraphEpoch(3), 2);
  EXPECT_FALSE(c.Add(0, 0, Decision(5, 9, 1)));
  EXPECT_FALSE(c.Add(0, 1, Marker(5, 9, 0, 1)));
  EXPECT_TRUE(c.Add(1, 0, Marker(5, 9, 1, 1)));
  EXPECT_THAT(CompleteTasks(c), ::testing::ElementsAre(1));
  EXPECT_EQ(c.duplicate_records(), 0u);
}

}  // namespace
}  // namespace flowsched::graph_manager
