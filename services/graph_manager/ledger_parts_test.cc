#include "services/graph_manager/ledger_parts.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace flowsched::graph_manager {
namespace {

// A RoundApplied of `decisions` decisions, the shape that outgrows a broker
// message.
v1::LedgerRecord BigRound(uint64_t seq, int decisions) {
  v1::LedgerRecord record;
  record.set_seq(seq);
  record.set_epoch(7);
  record.set_state_time_us(123);
  v1::RoundApplied* round = record.add_steps()->mutable_round();
  round->set_round_id(seq);
  for (int i = 0; i < decisions; ++i) {
    v1::LedgerDecision* d = round->add_decisions();
    d->mutable_decision()->set_task_id(static_cast<uint64_t>(i) + 1);
    d->mutable_decision()->set_machine_id(static_cast<uint64_t>(i % 997) + 1);
    d->mutable_decision()->set_idempotency_key(
        absl::StrCat("r", seq, "/t", i + 1));
    d->set_applied(i % 10 != 0);
    if (i % 10 == 0) d->set_stale_reason("task finished while solving");
  }
  return record;
}

std::vector<v1::LedgerRecord> Parse(const std::vector<std::string>& bytes) {
  std::vector<v1::LedgerRecord> out;
  for (const std::string& b : bytes) {
    v1::LedgerRecord r;
    EXPECT_TRUE(r.ParseFromString(b));
    out.push_back(r);
  }
  return out;
}

TEST(LedgerPartsTest, SmallRecordTravelsWhole) {
  const v1::LedgerRecord record = BigRound(3, 10);
  const auto parts =
      SplitLedgerRecord(record.SerializeAsString(), 3, GraphEpoch(7));
  ASSERT_EQ(parts.size(), 1u);
  LedgerAssembler assembler;
  auto whole = assembler.Add(Parse(parts)[0]);
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->SerializeAsString(), record.SerializeAsString());
}

TEST(LedgerPartsTest, LargeRoundIsSlicedUnderTheLimitAndReassembled) {
  // 150,000 decisions: the first round of a 12,500-machine cluster.
  const v1::LedgerRecord record = BigRound(9, 150'000);
  const std::string bytes = record.SerializeAsString();
  ASSERT_GT(bytes.size(), 1'000'000u);
  const auto parts = SplitLedgerRecord(bytes, 9, GraphEpoch(7));
  ASSERT_GT(parts.size(), 1u);
  for (const std::string& p : parts) EXPECT_LE(p.size(), kMaxLedgerRecordBytes);
  LedgerAssembler assembler;
  std::optional<v1::LedgerRecord> whole;
  const auto parsed = Parse(parts);
  for (size_t i = 0; i < parsed.size(); ++i) {
    EXPECT_EQ(parsed[i].seq(), 9u);
    whole = assembler.Add(parsed[i]);
    EXPECT_EQ(whole.has_value(), i + 1 == parsed.size()) << i;
  }
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->SerializeAsString(), bytes);
  EXPECT_EQ(assembler.incomplete(), 0u);
}

TEST(LedgerPartsTest, DuplicatesAndInterleavingStillGiveTheRecord) {
  // A crash between publication and acknowledgement re-publishes slices;
  // another record may sit between them.
  const std::string big = BigRound(4, 60'000).SerializeAsString();
  const std::string next = BigRound(5, 70'000).SerializeAsString();
  auto a = Parse(SplitLedgerRecord(big, 4, GraphEpoch(7), 100'000));
  auto b = Parse(SplitLedgerRecord(next, 5, GraphEpoch(7), 100'000));
  ASSERT_GT(a.size(), 2u);
  std::vector<v1::LedgerRecord> stream;
  stream.insert(stream.end(), a.begin(), a.begin() + 2);  // cut off
  stream.insert(stream.end(), b.begin(), b.end());
  stream.insert(stream.end(), a.begin(), a.end());  // published again
  std::mt19937 rng(11);
  std::shuffle(stream.begin() + 2, stream.end(), rng);
  LedgerAssembler assembler;
  std::vector<std::string> done;
  for (const auto& r : stream) {
    auto whole = assembler.Add(r);
    if (whole.has_value()) done.push_back(whole->SerializeAsString());
  }
  std::sort(done.begin(), done.end());
  std::vector<std::string> want = {big, next};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(done, want);
}

TEST(LedgerPartsTest, SlicesOfTwoWritersAtOneSeqAreNotMixed) {
  // A fenced instance and its successor both write a large record at seq 6.
  v1::LedgerRecord old_round = BigRound(6, 50'000);
  v1::LedgerRecord new_round = BigRound(6, 50'000);
  new_round.set_epoch(8);
  new_round.mutable_steps(0)->mutable_round()->set_round_id(60);
  auto a = Parse(SplitLedgerRecord(old_round.SerializeAsString(), 6,
                                   GraphEpoch(7), 100'000));
  auto b = Parse(SplitLedgerRecord(new_round.SerializeAsString(), 6,
                                   GraphEpoch(8), 100'000));
  ASSERT_EQ(a.size(), b.size());
  LedgerAssembler assembler;
  std::vector<v1::LedgerRecord> done;
  for (size_t i = 0; i < a.size(); ++i) {
    for (const auto* slice : {&b[i], &a[i]}) {
      auto whole = assembler.Add(*slice);
      if (whole.has_value()) done.push_back(*whole);
    }
  }
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].SerializeAsString(), new_round.SerializeAsString());
  EXPECT_EQ(done[1].SerializeAsString(), old_round.SerializeAsString());
  // Late duplicates of an assembled record neither yield it again nor
  // leave a set behind.
  for (const auto& slice : a) EXPECT_FALSE(assembler.Add(slice).has_value());
  EXPECT_EQ(assembler.incomplete(), 0u);
}

TEST(LedgerPartsTest, InconsistentSlicesAreRefusedNotCrashed) {
  v1::LedgerRecord out_of_range;
  out_of_range.set_seq(2);
  out_of_range.set_part(5);
  out_of_range.set_part_count(3);
  LedgerAssembler assembler;
  EXPECT_FALSE(assembler.Add(out_of_range).has_value());
  v1::LedgerRecord garbage_a, garbage_b;
  garbage_a.set_seq(3);
  garbage_a.set_part_count(2);
  garbage_a.set_part_bytes("\xff\xff\xff");
  garbage_b = garbage_a;
  garbage_b.set_part(1);
  EXPECT_FALSE(assembler.Add(garbage_a).has_value());
  EXPECT_FALSE(assembler.Add(garbage_b).has_value());  // does not parse
  EXPECT_EQ(assembler.incomplete(), 0u);
}

}  // namespace
}  // namespace flowsched::graph_manager
