#include "services/graph_manager/state_rebuilder.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "gtest/gtest.h"

namespace flowsched::graph_manager {
namespace {

v1::LedgerRecord Record(uint64_t seq, uint64_t epoch) {
  v1::LedgerRecord record;
  record.set_seq(seq);
  record.set_epoch(epoch);
  return record;
}

v1::LedgerRecord Claim(uint64_t seq, uint64_t epoch) {
  v1::LedgerRecord record = Record(seq, epoch);
  record.mutable_claim()->set_epoch(epoch);
  return record;
}

TEST(LedgerHistoryTest, KeepsTheFirstOfEachSeq) {
  LedgerHistory history;
  history.Add(Claim(1, 1));
  history.Add(Record(2, 1));
  v1::LedgerRecord again = Record(2, 1);
  again.mutable_cut()->set_round_id(7);  // a different body, same seq
  history.Add(again);
  ASSERT_EQ(history.records().size(), 2u);
  EXPECT_FALSE(history.Find(2)->has_cut());
  EXPECT_EQ(history.max_seq(), 2u);
  EXPECT_EQ(history.ignored(), 1u);
}

TEST(LedgerHistoryTest, AClaimSupersedesTheOlderEpochsTail) {
  LedgerHistory history;
  history.Add(Claim(1, 1));
  history.Add(Record(2, 1));
  history.Add(Record(3, 1));  // published by epoch 1 after epoch 2 read seq 2
  history.Add(Claim(3, 2));   // epoch 2 built on seq 1..2
  history.Add(Record(4, 2));
  history.Add(Record(4, 1));  // a zombie still writing: ignored
  history.Add(Record(5, 1));
  ASSERT_EQ(history.records().size(), 4u);
  EXPECT_TRUE(history.Find(3)->has_claim());
  EXPECT_EQ(history.Find(4)->epoch(), 2u);
  EXPECT_EQ(history.Find(5), nullptr);
  EXPECT_EQ(history.claimed_epoch(), GraphEpoch(2));
  EXPECT_EQ(history.max_epoch(), GraphEpoch(2));
}

TEST(LedgerHistoryTest, EveryHigherClaimFencesNotOnlyTheNextOne) {
  LedgerHistory history;
  history.Add(Claim(1, 1));
  history.Add(Record(2, 1));
  // Epoch 2 claimed at seq 5 (it had read up to 4), epoch 3 at seq 3 (it
  // had read up to 2 only); the claims arrive in that order.
  history.Add(Claim(5, 2));
  history.Add(Claim(3, 3));
  // Epoch 1's tail at seq 4 is below epoch 2's claim but above epoch 3's:
  // epoch 3 never saw it, so it is not history.
  history.Add(Record(4, 1));
  EXPECT_EQ(history.Find(4), nullptr);
  // Epoch 2's claim itself sits above epoch 3's claim: fenced as well.
  EXPECT_EQ(history.Find(5), nullptr);
  history.Add(Record(4, 3));
  ASSERT_NE(history.Find(4), nullptr);
  EXPECT_EQ(history.Find(4)->epoch(), 3u);
  EXPECT_EQ(history.claimed_epoch(), GraphEpoch(3));
}

TEST(LedgerHistoryTest, ARecordBelowTheClaimArrivingLateStillCounts) {
  LedgerHistory history;
  history.Add(Claim(1, 1));
  history.Add(Claim(3, 2));  // built on 1..2; record 2 re-published late
  history.Add(Record(2, 1));
  history.Add(Record(3, 1));
  ASSERT_EQ(history.records().size(), 3u);
  EXPECT_EQ(history.Find(2)->epoch(), 1u);
  EXPECT_TRUE(history.Find(3)->has_claim());
}

TEST(LedgerHistoryTest, MaxEpochCountsFencedRecordsToo) {
  LedgerHistory history;
  history.Add(Claim(1, 5));
  history.Add(Record(1, 3));  // superseded by the claim, but seen
  EXPECT_EQ(history.records().size(), 1u);
  EXPECT_EQ(history.max_epoch(), GraphEpoch(5));
  history.Add(Record(2, 7));
  EXPECT_EQ(history.max_epoch(), GraphEpoch(7));
}

TEST(LedgerFenceTest, NamesTheSeqsAClaimSupersedes) {
  LedgerFence fence;
  std::vector<uint64_t> superseded;
  EXPECT_TRUE(fence.Admit(Claim(1, 1), &superseded));
  EXPECT_TRUE(fence.Admit(Record(2, 1), &superseded));
  EXPECT_TRUE(fence.Admit(Record(3, 1), &superseded));
  EXPECT_TRUE(fence.Admit(Record(4, 1), &superseded));
  EXPECT_TRUE(superseded.empty());
  EXPECT_TRUE(fence.Admit(Claim(3, 2), &superseded));
  EXPECT_EQ(superseded, (std::vector<uint64_t>{3, 4}));
  EXPECT_TRUE(fence.Contains(2));
  EXPECT_TRUE(fence.Contains(3));  // now the claim's
  EXPECT_FALSE(fence.Contains(4));
  EXPECT_FALSE(fence.Admit(Record(4, 1), &superseded));  // the zombie
  EXPECT_FALSE(fence.Admit(Record(2, 1), &superseded));  // a duplicate
  EXPECT_EQ(fence.ignored(), 4u);
}

TEST(MoveAsideTest, RenamesAndNeverOverwrites) {
  const std::string dir =
      (std::filesystem::temp_directory_path() /
       ("flowsched-moveaside-" + std::to_string(::getpid())))
          .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/state");
  std::ofstream(dir + "/state/CURRENT") << "x";
  auto first = MoveAside(dir + "/state");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(std::filesystem::exists(dir + "/state"));
  EXPECT_TRUE(std::filesystem::exists(*first + "/CURRENT"));
  std::filesystem::create_directories(dir + "/state");
  auto second = MoveAside(dir + "/state");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(*first, *second);
  EXPECT_TRUE(std::filesystem::exists(*first));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace flowsched::graph_manager
