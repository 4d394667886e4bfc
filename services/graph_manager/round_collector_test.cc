#include "services/graph_manager/round_collector.h"

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

TEST(RoundCollectorTest, CompletesWhenEveryPartitionIsClosed) {
  RoundCollector c;
  c.Expect(5, 3, 2);
  EXPECT_FALSE(c.Add(0, Decision(5, 9, 1)));
  EXPECT_FALSE(c.Add(0, Marker(5, 9, 0, 2)));
  EXPECT_FALSE(c.Add(1, Decision(5, 9, 2)));
  EXPECT_TRUE(c.Add(1, Marker(5, 9, 1, 2)));
  EXPECT_EQ(c.complete_decisions().size(), 2u);
  EXPECT_FALSE(c.expecting());
}

TEST(RoundCollectorTest, IgnoresOtherRoundsAndEpochs) {
  RoundCollector c;
  c.Expect(5, 3, 2);
  EXPECT_FALSE(c.Add(0, Decision(4, 9, 1)));             // old round
  EXPECT_FALSE(c.Add(0, Decision(5, 9, 1, /*graph_epoch=*/2)));  // zombie
  EXPECT_FALSE(c.Add(0, Marker(5, 9, 0, 0)));
  EXPECT_TRUE(c.Add(1, Marker(5, 9, 1, 0)));
  EXPECT_TRUE(c.complete_decisions().empty());
  EXPECT_EQ(c.ignored_records(), 2u);
}

TEST(RoundCollectorTest, MissingDecisionsMakeTheAnswerUnusable) {
  RoundCollector c;
  c.Expect(5, 3, 2);
  EXPECT_FALSE(c.Add(0, Marker(5, 9, 0, 3)));
  EXPECT_FALSE(c.Add(1, Decision(5, 9, 2)));
  EXPECT_FALSE(c.Add(1, Marker(5, 9, 1, 3)));
  EXPECT_TRUE(c.expecting());  // still waiting; times out upstream
}

TEST(RoundCollectorTest, TwoSolversNeverMix) {
  RoundCollector c;
  c.Expect(5, 3, 2);
  EXPECT_FALSE(c.Add(0, Decision(5, 100, 1)));
  EXPECT_FALSE(c.Add(0, Decision(5, 200, 7)));
  EXPECT_FALSE(c.Add(0, Marker(5, 200, 0, 1)));
  EXPECT_FALSE(c.Add(0, Marker(5, 100, 0, 1)));
  EXPECT_TRUE(c.Add(1, Marker(5, 200, 1, 1)));
  ASSERT_EQ(c.complete_decisions().size(), 1u);
  EXPECT_EQ(c.complete_decisions()[0].task_id(), 7u);
  EXPECT_FALSE(c.Add(1, Marker(5, 100, 1, 1)));  // too late, ignored
}

TEST(RoundCollectorTest, MarkerFromTheWrongPartitionIsIgnored) {
  RoundCollector c;
  c.Expect(5, 3, 2);
  EXPECT_FALSE(c.Add(1, Marker(5, 9, 0, 0)));
  EXPECT_FALSE(c.Add(1, Marker(5, 9, 1, 0)));
  EXPECT_TRUE(c.expecting());
}

TEST(RoundCollectorTest, FencesAnswersFromOtherSolverEpochs) {
  RoundCollector c;
  c.set_solver_epoch(9);
  c.Expect(5, 3, 2);
  // A complete answer from the old worker 8 (paused, then resumed) for the
  // very round in flight: not applied, counted as fenced.
  EXPECT_FALSE(c.Add(0, Decision(5, 8, 1)));
  EXPECT_FALSE(c.Add(0, Marker(5, 8, 0, 1)));
  EXPECT_FALSE(c.Add(1, Marker(5, 8, 1, 1)));
  EXPECT_EQ(c.fenced_records(), 3u);
  EXPECT_TRUE(c.expecting());
  // The current worker's answer counts.
  EXPECT_FALSE(c.Add(0, Decision(5, 9, 2)));
  EXPECT_FALSE(c.Add(0, Marker(5, 9, 0, 1)));
  EXPECT_TRUE(c.Add(1, Marker(5, 9, 1, 1)));
  ASSERT_EQ(c.complete_decisions().size(), 1u);
  EXPECT_EQ(c.complete_decisions()[0].task_id(), 2u);
  // The fence survives Expect and Clear.
  c.Expect(6, 3, 2);
  EXPECT_FALSE(c.Add(0, Decision(6, 8, 1)));
  EXPECT_EQ(c.fenced_records(), 4u);
}

TEST(RoundCollectorTest, NewSolverEpochDropsPartialAnswers) {
  RoundCollector c;
  c.Expect(5, 3, 2);  // no epoch known yet: any worker may answer
  EXPECT_FALSE(c.Add(0, Decision(5, 8, 1)));
  EXPECT_FALSE(c.Add(0, Marker(5, 8, 0, 1)));
  c.set_solver_epoch(9);  // a takeover
  EXPECT_FALSE(c.Add(1, Marker(5, 8, 1, 1)));
  EXPECT_EQ(c.fenced_records(), 1u);
  EXPECT_TRUE(c.expecting());
}

}  // namespace
}  // namespace flowsched::graph_manager
