// MemoryBus, the in-memory test double of the bus: what the graph manager's
// unit tests rely on (offsets, watermarks, delivery on Flush, the faults).

#include "services/bus/memory_bus.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/bus/topics.h"
#include "services/common/status_matchers.h"

namespace flowsched::bus {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

std::vector<std::string> MemoryValues(const std::vector<Record>& records) {
  std::vector<std::string> values;
  for (const Record& record : records) values.push_back(record.value);
  return values;
}

TEST(BusMemoryTest, RecordsBecomeVisibleOnFlushWithDenseOffsets) {
  MemoryBus bus({{"t", 2}});
  auto sink = bus.NewSink();
  ASSERT_THAT(sink.status(), IsOk());
  ASSERT_THAT((*sink)->Produce("t", 1, "k", "a"), IsOk());
  ASSERT_THAT((*sink)->Produce("t", 1, "k", "b"), IsOk());
  EXPECT_EQ(bus.EndOffset("t", 1), 0);  // queued, not delivered
  ASSERT_THAT((*sink)->Flush(0), IsOk());
  const std::vector<Record> records = bus.Read("t", 1);
  ASSERT_EQ(records.size(), 2U);
  EXPECT_EQ(records[0].offset, 0);
  EXPECT_EQ(records[1].offset, 1);
  EXPECT_EQ(records[1].key, "k");
  EXPECT_THAT((*sink)->PartitionCount("t", 0).status(), IsOk());
  EXPECT_EQ(*(*sink)->PartitionCount("t", 0), 2);
  EXPECT_THAT((*sink)->PartitionCount("nope", 0).status(),
              StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_THAT((*sink)->Produce("t", 2, "k", "c"),
              StatusIs(absl::StatusCode::kNotFound, ""));
}

TEST(BusMemoryTest, SourceReadsFromAssignedOffsetsAndReportsWatermarks) {
  MemoryBus bus({{"t", 2}});
  for (const char* value : {"a", "b", "c"}) {
    ASSERT_THAT(bus.Append("t", 0, "", value).status(), IsOk());
  }
  ASSERT_THAT(bus.Append("t", 1, "", "x").status(), IsOk());
  auto source = bus.NewSource("g");
  ASSERT_THAT(source.status(), IsOk());
  RecordSource& in = **source;
  EXPECT_THAT(in.CachedWatermarks("t", 0).status(),
              StatusIs(absl::StatusCode::kNotFound, ""));
  ASSERT_THAT(in.Assign({{"t", 0, 1}, {"t", 1, kOffsetEnd}}), IsOk());
  auto records = in.Poll(10, 0);
  ASSERT_THAT(records.status(), IsOk());
  EXPECT_THAT(MemoryValues(*records), ::testing::ElementsAre("b", "c"));
  EXPECT_TRUE(in.Poll(10, 0)->empty());
  ASSERT_THAT(bus.Append("t", 1, "", "y").status(), IsOk());
  EXPECT_THAT(MemoryValues(in.PollOrBackOff(10, 0)),
              ::testing::ElementsAre("y"));
  auto marks = in.Watermarks("t", 0, 0);
  ASSERT_THAT(marks.status(), IsOk());
  EXPECT_EQ(*marks, std::make_pair(int64_t{0}, int64_t{3}));
  EXPECT_EQ(*in.CachedWatermarks("t", 1),
            std::make_pair(int64_t{0}, int64_t{2}));
  // Back to the beginning; max_records bounds a poll.
  ASSERT_THAT(in.Assign({{"t", 0, kOffsetBeginning}}), IsOk());
  EXPECT_THAT(MemoryValues(*in.Poll(2, 0)), ::testing::ElementsAre("a", "b"));
  EXPECT_THAT(in.Assign({{"nope", 0, 0}}),
              StatusIs(absl::StatusCode::kNotFound, ""));
}

TEST(BusMemoryTest, DeletedRecordsMoveTheLowWatermarkAndReadersOn) {
  MemoryBus bus({{"t", 1}});
  for (const char* value : {"a", "b", "c", "d"}) {
    ASSERT_THAT(bus.Append("t", 0, "", value).status(), IsOk());
  }
  auto source = bus.NewSource("g");
  ASSERT_THAT(source.status(), IsOk());
  RecordSource& in = **source;
  ASSERT_THAT(in.Assign({{"t", 0, 1}}), IsOk());
  ASSERT_THAT(bus.DeleteBefore("t", 0, 2), IsOk());
  ASSERT_THAT(bus.DeleteBefore("t", 0, 1), IsOk());  // never moves back
  EXPECT_EQ(*in.Watermarks("t", 0, 0), std::make_pair(int64_t{2}, int64_t{4}));
  // A reader below the low watermark continues at it, as with
  // auto.offset.reset=earliest; offsets stay those of the records.
  auto records = in.Poll(10, 0);
  ASSERT_THAT(records.status(), IsOk());
  EXPECT_THAT(MemoryValues(*records), ::testing::ElementsAre("c", "d"));
  EXPECT_EQ(records->front().offset, 2);
  ASSERT_THAT(in.Assign({{"t", 0, kOffsetBeginning}}), IsOk());
  EXPECT_THAT(MemoryValues(*in.Poll(10, 0)), ::testing::ElementsAre("c", "d"));
  EXPECT_THAT(MemoryValues(bus.Read("t", 0)), ::testing::ElementsAre("c", "d"));
  EXPECT_THAT(bus.DeleteBefore("t", 1, 0),
              StatusIs(absl::StatusCode::kNotFound, ""));
}

TEST(BusMemoryTest, FaultsRefuseProduceAndFailDeliveries) {
  MemoryBus bus({{"t", 1}});
  auto sink = bus.NewSink();
  ASSERT_THAT(sink.status(), IsOk());
  bus.set_refuse_produce(true);
  EXPECT_THAT((*sink)->Produce("t", 0, "", "a"),
              StatusIs(absl::StatusCode::kUnavailable, ""));
  bus.set_refuse_produce(false);
  ASSERT_THAT((*sink)->Produce("t", 0, "", "b"), IsOk());
  bus.set_fail_delivery(true);
  EXPECT_THAT((*sink)->Flush(0), StatusIs(absl::StatusCode::kUnavailable, ""));
  EXPECT_EQ(bus.failed_deliveries(), 1U);
  EXPECT_THAT((*sink)->Flush(0), IsOk());  // nothing outstanding
  bus.set_fail_delivery(false);
  ASSERT_THAT((*sink)->Produce("t", 0, "", "c"), IsOk());
  ASSERT_THAT((*sink)->Flush(0), IsOk());
  EXPECT_THAT(MemoryValues(bus.Read("t", 0)), ::testing::ElementsAre("c"));
}

TEST(BusMemoryTest, AnyPartitionIsStablePerKeyAndDestroyedSinkDelivers) {
  MemoryBus bus({{"t", 4}});
  {
    auto sink = bus.NewSink();
    ASSERT_THAT(sink.status(), IsOk());
    ASSERT_THAT((*sink)->Produce("t", kAnyPartition, "job/7", "a"), IsOk());
    ASSERT_THAT((*sink)->Produce("t", kAnyPartition, "job/7", "b"), IsOk());
  }
  int with_records = 0;
  for (int32_t p = 0; p < 4; ++p) {
    const auto records = bus.Read("t", p);
    if (records.empty()) continue;
    ++with_records;
    EXPECT_THAT(MemoryValues(records), ::testing::ElementsAre("a", "b"));
  }
  EXPECT_EQ(with_records, 1);
}

}  // namespace
}  // namespace flowsched::bus
