#include "services/codec/round_parts.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/codec/round_codec.h"

namespace flowsched::codec {
namespace {

using flow::GraphChange;
using Progress = RoundAssembler::Progress;

v1::SolverRound Header(uint64_t round_id, uint64_t graph_epoch) {
  v1::SolverRound header;
  header.set_round_id(round_id);
  header.set_epoch(graph_epoch);
  header.set_snapshot(true);
  header.set_base_round_id(round_id - 1);
  header.set_cut_time_us(1'700'000'000'000'000);
  header.set_solver_epoch(123'456'789);
  return header;
}

// A snapshot-like round: task nodes and their arcs.
std::vector<GraphChange> Changes(size_t count) {
  std::vector<GraphChange> changes;
  for (size_t i = 0; i < count; ++i) {
    const auto node = static_cast<flow::NodeId>(i + 2);
    if (i % 2 == 0) {
      changes.push_back({.type = GraphChange::Type::kAddNode,
                         .node = node,
                         .data = {.kind = flow::NodeKind::kTask,
                                  .supply = 1,
                                  .entity_id = 1000 + i}});
    } else {
      changes.push_back({.type = GraphChange::Type::kSetArc,
                         .src = node,
                         .dst = 1,
                         .capacity = 1,
                         .cost = static_cast<int64_t>(i)});
    }
  }
  return changes;
}

std::vector<std::string> Encoded(const v1::SolverRound& round) {
  std::vector<std::string> out;
  for (const v1::GraphChange& change : round.changes()) {
    out.push_back(change.SerializeAsString());
  }
  return out;
}

std::vector<std::string> Encoded(const std::vector<GraphChange>& changes) {
  std::vector<std::string> out;
  for (const GraphChange& change : changes) {
    v1::GraphChange message;
    EncodeChange(change, message);
    out.push_back(message.SerializeAsString());
  }
  return out;
}

TEST(SplitRoundTest, EveryRecordStaysWithinTheLimit) {
  const std::vector<GraphChange> changes = Changes(5000);
  for (size_t max_bytes : {size_t{600}, size_t{4096}, size_t{64 * 1024}}) {
    const auto parts = SplitRound(Header(7, 3), changes, max_bytes);
    ASSERT_GT(parts.size(), 1u) << max_bytes;
    for (const v1::SolverRound& part : parts) {
      EXPECT_LE(part.SerializeAsString().size(), max_bytes);
      EXPECT_GT(part.changes_size(), 0);
    }
  }
}

TEST(SplitRoundTest, PartsAreNumberedAndRepeatTheHeader) {
  const v1::SolverRound header = Header(7, 3);
  const auto parts = SplitRound(header, Changes(2000), 4096);
  std::vector<std::string> carried;
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(parts[i].part(), i);
    EXPECT_EQ(parts[i].part_count(), parts.size());
    v1::SolverRound bare = parts[i];
    bare.clear_changes();
    bare.clear_part();
    bare.clear_part_count();
    EXPECT_EQ(bare.SerializeAsString(), header.SerializeAsString());
    for (std::string& change : Encoded(parts[i])) carried.push_back(change);
  }
  EXPECT_EQ(carried, Encoded(Changes(2000)));  // all of them, in order
}

// The gang list travels once, with part 0, and the assembled round has it.
TEST(SplitRoundTest, GangsTravelWithPartZeroOnly) {
  v1::SolverRound header = Header(7, 3);
  for (uint64_t job = 1; job <= 50; ++job) {
    v1::GangRequirement* gang = header.add_gangs();
    gang->set_job_id(job);
    gang->set_min_members(4);
    gang->set_need(4);
  }
  const auto parts = SplitRound(header, Changes(2000), 4096);
  ASSERT_GT(parts.size(), 2u);
  EXPECT_EQ(parts[0].gangs_size(), 50);
  RoundAssembler assembler;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) {
      EXPECT_EQ(parts[i].gangs_size(), 0) << i;
    }
    EXPECT_LE(parts[i].SerializeAsString().size(), 4096u);
    assembler.Add(parts[i]);
  }
  const v1::SolverRound whole = assembler.TakeRound();
  ASSERT_EQ(whole.gangs_size(), 50);
  EXPECT_EQ(whole.gangs(49).job_id(), 50u);
  EXPECT_EQ(whole.changes_size(), 2000);
}

TEST(SplitRoundTest, SmallAndEmptyRoundsAreOneRecord) {
  for (size_t count : {size_t{0}, size_t{3}}) {
    const auto parts = SplitRound(Header(7, 3), Changes(count), 512 * 1024);
    ASSERT_EQ(parts.size(), 1u);
    EXPECT_EQ(parts[0].part(), 0u);
    EXPECT_EQ(parts[0].part_count(), 1u);
    EXPECT_EQ(static_cast<size_t>(parts[0].changes_size()), count);
  }
}

TEST(SplitRoundTest, AChangeOverTheLimitTravelsAlone) {
  std::vector<GraphChange> changes = Changes(4);
  GraphChange big{.type = GraphChange::Type::kSetArc,
                  .src = 2,
                  .dst = 1,
                  .capacity = 1,
                  .cost = 1};
  for (int i = 0; i < 100; ++i) big.extra_segments.push_back({1, i});
  changes.insert(changes.begin() + 2, big);
  const auto parts = SplitRound(Header(7, 3), changes, 200);
  std::vector<std::string> carried;
  for (const v1::SolverRound& part : parts) {
    if (part.SerializeAsString().size() > 200) {
      EXPECT_EQ(part.changes_size(), 1);
    }
    for (std::string& change : Encoded(part)) carried.push_back(change);
  }
  EXPECT_EQ(carried, Encoded(changes));
}

TEST(RoundAssemblerTest, ALargeRoundTripsThroughBytes) {
  const std::vector<GraphChange> changes = Changes(20'000);
  const v1::SolverRound header = Header(9, 4);
  const auto parts = SplitRound(header, changes, 16 * 1024);
  ASSERT_GT(parts.size(), 10u);
  RoundAssembler assembler;
  for (size_t i = 0; i < parts.size(); ++i) {
    v1::SolverRound read;
    ASSERT_TRUE(read.ParseFromString(parts[i].SerializeAsString()));
    const Progress progress = assembler.Add(std::move(read));
    EXPECT_EQ(progress, i + 1 < parts.size() ? Progress::kIncomplete
                                             : Progress::kComplete);
    EXPECT_EQ(assembler.assembling(), i + 1 < parts.size());
  }
  const v1::SolverRound whole = assembler.TakeRound();
  EXPECT_FALSE(assembler.assembling());
  EXPECT_EQ(whole.round_id(), 9u);
  EXPECT_EQ(whole.epoch(), 4u);
  EXPECT_EQ(whole.solver_epoch(), header.solver_epoch());
  EXPECT_TRUE(whole.snapshot());
  ASSERT_EQ(static_cast<size_t>(whole.changes_size()), changes.size());
  for (size_t i = 0; i < changes.size(); ++i) {
    auto decoded = DecodeChange(whole.changes(static_cast<int>(i)));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->type, changes[i].type);
    EXPECT_EQ(decoded->node, changes[i].node);
    EXPECT_EQ(decoded->src, changes[i].src);
    EXPECT_EQ(decoded->cost, changes[i].cost);
  }
}

TEST(RoundAssemblerTest, AnUnsplitRoundIsCompleteAtOnce) {
  RoundAssembler assembler;
  v1::SolverRound round = Header(3, 1);  // part_count 0: one record
  EXPECT_EQ(assembler.Add(round), Progress::kComplete);
  EXPECT_EQ(assembler.TakeRound().round_id(), 3u);
  round.set_part_count(1);
  EXPECT_EQ(assembler.Add(round), Progress::kComplete);
}

TEST(RoundAssemblerTest, AGapResetsAndReports) {
  const auto parts = SplitRound(Header(9, 4), Changes(200), 1024);
  ASSERT_GE(parts.size(), 4u);
  RoundAssembler assembler;
  EXPECT_EQ(assembler.Add(parts[0]), Progress::kIncomplete);
  EXPECT_EQ(assembler.Add(parts[2]), Progress::kMissingPart);
  EXPECT_FALSE(assembler.assembling());
  // What follows the gap cannot complete the round either.
  EXPECT_EQ(assembler.Add(parts[3]), Progress::kMissingPart);
  // A reader that starts in the middle of a round sees a gap too.
  RoundAssembler late;
  EXPECT_EQ(late.Add(parts[1]), Progress::kMissingPart);
}

TEST(RoundAssemblerTest, AForeignPartResetsAndReports) {
  const auto round9 = SplitRound(Header(9, 4), Changes(200), 1024);
  const auto round10 = SplitRound(Header(10, 4), Changes(200), 1024);
  const auto other_epoch = SplitRound(Header(9, 5), Changes(200), 1024);
  RoundAssembler assembler;
  EXPECT_EQ(assembler.Add(round9[0]), Progress::kIncomplete);
  EXPECT_EQ(assembler.Add(round10[1]), Progress::kMissingPart);
  EXPECT_EQ(assembler.Add(round9[0]), Progress::kIncomplete);
  EXPECT_EQ(assembler.Add(other_epoch[1]), Progress::kMissingPart);
  EXPECT_FALSE(assembler.assembling());
}

// A part whose count disagrees with part 0's could otherwise end the round
// early (a count of 2 makes part 1 look like the last).
TEST(RoundAssemblerTest, APartWithAnotherCountResetsAndReports) {
  auto parts = SplitRound(Header(9, 4), Changes(200), 1024);
  ASSERT_GT(parts.size(), 3u);
  RoundAssembler assembler;
  EXPECT_EQ(assembler.Add(parts[0]), Progress::kIncomplete);
  parts[1].set_part_count(2);
  EXPECT_EQ(assembler.Add(parts[1]), Progress::kMissingPart);
  EXPECT_FALSE(assembler.assembling());
  // A part numbered past its own count is no part of any round.
  v1::SolverRound beyond = parts[0];
  beyond.set_part(beyond.part_count());
  EXPECT_EQ(assembler.Add(beyond), Progress::kMissingPart);
}

TEST(RoundAssemblerTest, PartZeroStartsOver) {
  const auto cut_short = SplitRound(Header(9, 4), Changes(200), 1024);
  const auto next = SplitRound(Header(9, 5), Changes(10), 512 * 1024);
  ASSERT_EQ(next.size(), 1u);
  RoundAssembler assembler;
  EXPECT_EQ(assembler.Add(cut_short[0]), Progress::kIncomplete);
  EXPECT_EQ(assembler.Add(cut_short[1]), Progress::kIncomplete);
  EXPECT_EQ(assembler.Add(next[0]), Progress::kComplete);
  const v1::SolverRound whole = assembler.TakeRound();
  EXPECT_EQ(whole.epoch(), 5u);
  EXPECT_EQ(whole.changes_size(), 10);
}

TEST(RoundAssemblerTest, ACompleteRoundNotTakenIsDroppedByTheNextPart) {
  const auto one = SplitRound(Header(9, 4), Changes(3), 512 * 1024);
  const auto two = SplitRound(Header(10, 4), Changes(200), 1024);
  RoundAssembler assembler;
  EXPECT_EQ(assembler.Add(one[0]), Progress::kComplete);
  EXPECT_EQ(assembler.Add(two[1]), Progress::kMissingPart);
  EXPECT_FALSE(assembler.assembling());
}

}  // namespace
}  // namespace flowsched::codec
