#include "storage/keys.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"

namespace flowsched::storage {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;
using ::testing::Pair;

TEST(KeysTest, IdKeysRoundTrip) {
  for (uint64_t id : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{10},
                      uint64_t{255}, uint64_t{256}, uint64_t{1} << 40,
                      std::numeric_limits<uint64_t>::max()}) {
    EXPECT_EQ(*DecodeIdKey(JobKey(id), kJobPrefix), id);
    EXPECT_EQ(*DecodeIdKey(TaskKey(id), kTaskPrefix), id);
    EXPECT_EQ(*DecodeIdKey(MachineKey(id), kMachinePrefix), id);
  }
  for (uint32_t id :
       {0U, 2U, 10U, 65536U, std::numeric_limits<uint32_t>::max()}) {
    EXPECT_EQ(*DecodeNodeKey(NodeKey(id)), id);
    EXPECT_EQ(*DecodeIdKey(NodeKey(id), kNodePrefix), id);
  }
}

TEST(KeysTest, KeysHaveFixedWidthAndPrefix) {
  EXPECT_EQ(JobKey(7), std::string("j/\0\0\0\0\0\0\0\x07", 10));
  EXPECT_EQ(NodeKey(7), std::string("n/\0\0\0\x07", 6));
  EXPECT_EQ(ArcKey(1, 2), std::string("a/\0\0\0\x01\0\0\0\x02", 10));
  EXPECT_EQ(MetaKey("graph_manager"), "meta/graph_manager");
  EXPECT_TRUE(OffsetKey("events", 3).starts_with(OffsetTopicPrefix("events")));
  EXPECT_TRUE(OffsetKey("events", 3).starts_with(kOffsetPrefix));
}

TEST(KeysTest, ArcKeyRoundTrip) {
  ASSERT_THAT(DecodeArcKey(ArcKey(0, 0)), IsOk());
  EXPECT_THAT(*DecodeArcKey(ArcKey(0, 0)), Pair(0U, 0U));
  auto decoded = DecodeArcKey(ArcKey(3, 0xfffffffeU));
  ASSERT_THAT(decoded, IsOk());
  EXPECT_THAT(*decoded, Pair(3U, 0xfffffffeU));
}

TEST(KeysTest, OffsetKeyRoundTrip) {
  for (int32_t partition : {0, 1, 7, 1000, std::numeric_limits<int32_t>::max(),
                            -1, std::numeric_limits<int32_t>::min()}) {
    for (const std::string& topic : {std::string("flowsched.events"),
                                     std::string(), std::string("a\0b", 3)}) {
      auto decoded = DecodeOffsetKey(OffsetKey(topic, partition));
      ASSERT_THAT(decoded, IsOk());
      EXPECT_EQ(decoded->topic, topic);
      EXPECT_EQ(decoded->partition, partition);
    }
  }
}

TEST(KeysTest, OffsetTopicPrefixDoesNotMatchLongerTopic) {
  EXPECT_FALSE(
      OffsetKey("events2", 0).starts_with(OffsetTopicPrefix("events")));
  EXPECT_FALSE(OffsetKey("event", 0).starts_with(OffsetTopicPrefix("events")));
}

TEST(KeysTest, OffsetValueRoundTrip) {
  for (int64_t offset : {int64_t{0}, int64_t{1}, int64_t{1} << 33,
                         std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(*DecodeOffsetValue(EncodeOffsetValue(offset)), offset);
  }
}

// Byte order of encoded keys equals numeric order, which is what makes
// prefix scans return entities in id order.
TEST(KeysTest, EncodingPreservesNumericOrder) {
  const std::vector<uint64_t> ids = {0,
                                     1,
                                     2,
                                     9,
                                     10,
                                     255,
                                     256,
                                     65535,
                                     65536,
                                     uint64_t{1} << 32,
                                     std::numeric_limits<uint64_t>::max()};
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    EXPECT_LT(JobKey(ids[i]), JobKey(ids[i + 1])) << ids[i];
  }
  const std::vector<uint32_t> node_ids = {
      0, 1, 2, 9, 10, 255, 256, 65536, std::numeric_limits<uint32_t>::max()};
  for (size_t i = 0; i + 1 < node_ids.size(); ++i) {
    EXPECT_LT(NodeKey(node_ids[i]), NodeKey(node_ids[i + 1])) << node_ids[i];
  }
  EXPECT_LT(ArcKey(1, 0xffffffffU), ArcKey(2, 0));
  EXPECT_LT(ArcKey(2, 3), ArcKey(2, 10));
  EXPECT_LT(DeadLetterKey(2), DeadLetterKey(10));
  EXPECT_LT(OffsetKey("t", -1), OffsetKey("t", 0));
  EXPECT_LT(OffsetKey("t", 2), OffsetKey("t", 10));
  EXPECT_LT(OffsetKey("t", std::numeric_limits<int32_t>::min()),
            OffsetKey("t", -1));
}

TEST(KeysTest, NoFamilyPrefixIsAPrefixOfAnother) {
  const std::vector<std::string_view> prefixes = {
      kJobPrefix,    kTaskPrefix, kMachinePrefix, kNodePrefix,      kArcPrefix,
      kOffsetPrefix, kMetaPrefix, kLedgerPrefix,  kDeadLetterPrefix};
  for (std::string_view a : prefixes) {
    for (std::string_view b : prefixes) {
      if (a != b) {
        EXPECT_FALSE(b.starts_with(a)) << a << " vs " << b;
      }
    }
  }
}

TEST(KeysTest, MalformedIdKeysAreDataLoss) {
  EXPECT_THAT(DecodeIdKey("j/", kJobPrefix),
              StatusIs(absl::StatusCode::kDataLoss, "malformed"));
  EXPECT_THAT(DecodeIdKey(JobKey(1) + "x", kJobPrefix),
              StatusIs(absl::StatusCode::kDataLoss, "malformed"));
  EXPECT_THAT(DecodeIdKey(TaskKey(1), kJobPrefix),
              StatusIs(absl::StatusCode::kDataLoss, "malformed"));
  EXPECT_THAT(DecodeIdKey(JobKey(1).substr(0, 9), kJobPrefix),
              StatusIs(absl::StatusCode::kDataLoss, "malformed"));
  EXPECT_THAT(DecodeNodeKey(JobKey(1)),
              StatusIs(absl::StatusCode::kDataLoss, "malformed"));
  EXPECT_THAT(DecodeIdKey("", kJobPrefix),
              StatusIs(absl::StatusCode::kDataLoss, ""));
}

TEST(KeysTest, MalformedArcAndOffsetKeysAreDataLoss) {
  EXPECT_THAT(DecodeArcKey(NodeKey(1)),
              StatusIs(absl::StatusCode::kDataLoss, "malformed arc"));
  EXPECT_THAT(DecodeArcKey(ArcKey(1, 2) + "\x01"),
              StatusIs(absl::StatusCode::kDataLoss, "malformed arc"));
  EXPECT_THAT(DecodeArcKey("a/short"),
              StatusIs(absl::StatusCode::kDataLoss, "malformed arc"));

  EXPECT_THAT(DecodeOffsetKey("o/"),
              StatusIs(absl::StatusCode::kDataLoss, "malformed offset"));
  const std::string good = OffsetKey("events", 1);
  EXPECT_THAT(DecodeOffsetKey(good.substr(0, good.size() - 1)),
              StatusIs(absl::StatusCode::kDataLoss, "malformed offset"));
  EXPECT_THAT(DecodeOffsetKey(good + "x"),
              StatusIs(absl::StatusCode::kDataLoss, "malformed offset"));
  // A length field claiming more topic bytes than the key has.
  std::string lying = good;
  lying[kOffsetPrefix.size()] = '\x7f';
  EXPECT_THAT(DecodeOffsetKey(lying),
              StatusIs(absl::StatusCode::kDataLoss, "malformed offset"));
  EXPECT_THAT(DecodeOffsetKey(JobKey(1)),
              StatusIs(absl::StatusCode::kDataLoss, "malformed offset"));

  EXPECT_THAT(DecodeOffsetValue("1234567"),
              StatusIs(absl::StatusCode::kDataLoss, "malformed offset value"));
  EXPECT_THAT(DecodeOffsetValue(EncodeOffsetValue(-5)),
              StatusIs(absl::StatusCode::kDataLoss, "negative"));
}

TEST(KeysTest, PrefixSuccessor) {
  EXPECT_EQ(PrefixSuccessor("j/"), "j0");
  EXPECT_EQ(PrefixSuccessor(std::string("a\xff\xff", 3)), "b");
  EXPECT_EQ(PrefixSuccessor(std::string("\xff", 1)), "");
  EXPECT_EQ(PrefixSuccessor(""), "");
}

}  // namespace
}  // namespace flowsched::storage
