// The graph manager's outboxes (outbox.h): ledger records and dead letters
// staged with the state survive a crash before the broker acknowledged them.

#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "services/bus/consumer.h"
#include "services/bus/dead_letter_publisher.h"
#include "services/bus/embedded_broker.h"
#include "services/bus/topics.h"
#include "services/graph_manager/dead_letter_outbox.h"
#include "services/graph_manager/ledger_publisher.h"
#include "services/graph_manager/state_rebuilder.h"
#include "storage/keys.h"

namespace flowsched::graph_manager {
namespace {

class OutboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto broker =
        bus::EmbeddedBroker::Start(1, bus::DefaultTopicSpecs(topics_));
    ASSERT_TRUE(broker.ok()) << broker.status();
    broker_ = std::move(broker).value();
    options_.brokers = broker_->bootstrap_servers();
    dir_ = (std::filesystem::temp_directory_path() /
            ("flowsched-outbox-" + std::to_string(::getpid())))
               .string();
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<storage::StateStore> OpenStore() {
    auto store = storage::StateStore::Open(dir_, {});
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  size_t PendingCount(const storage::StateStore& store,
                      std::string_view prefix = storage::kLedgerPrefix) {
    size_t count = 0;
    EXPECT_TRUE(store
                    .ScanPrefix(prefix,
                                [&](std::string_view, std::string_view) {
                                  ++count;
                                  return absl::OkStatus();
                                })
                    .ok());
    return count;
  }
  LedgerHistory ReadBack() {
    auto consumer = bus::Consumer::Create(options_, "ledger-test");
    EXPECT_TRUE(consumer.ok());
    LedgerHistory history;
    int64_t next = bus::kOffsetBeginning;
    EXPECT_TRUE(
        ReadLedger(**consumer, topics_.ledger, 10'000, &next, history).ok());
    return history;
  }
  // Every letter on the dead-letter topic (one partition), in order.
  std::vector<v1::DeadLetter> ReadLetters() {
    auto consumer = bus::Consumer::Create(options_, "letters-test");
    EXPECT_TRUE(consumer.ok());
    std::vector<v1::DeadLetter> letters;
    if (!consumer.ok()) return letters;
    EXPECT_TRUE((*consumer)->Assign({{topics_.dead_letters, 0}}).ok());
    auto marks = (*consumer)->Watermarks(topics_.dead_letters, 0, 5000);
    EXPECT_TRUE(marks.ok());
    for (int i = 0; marks.ok() && i < 100 &&
                    static_cast<int64_t>(letters.size()) < marks->second;
         ++i) {
      auto records = (*consumer)->Poll(100, 100);
      EXPECT_TRUE(records.ok());
      for (const bus::Record& record : *records) {
        v1::DeadLetter& letter = letters.emplace_back();
        EXPECT_TRUE(letter.ParseFromString(record.value));
        // Keyed by the original's partition: letters about one stay in order.
        EXPECT_EQ(record.key,
                  absl::StrCat(letter.topic(), "/", letter.partition()));
      }
    }
    return letters;
  }

  bus::TopicNames topics_;
  std::unique_ptr<bus::EmbeddedBroker> broker_;
  bus::KafkaOptions options_;
  std::string dir_;
};

v1::LedgerRecord RecordWithSeq(uint64_t seq) {
  v1::LedgerRecord record;
  record.set_seq(seq);
  record.set_epoch(1);
  return record;
}

TEST_F(OutboxTest, LedgerRecordsStagedBeforeACrashArePublished) {
  {
    // Staged and committed with the state, then the process "dies" before
    // publishing record 2.
    auto producer = bus::Producer::Create(options_);
    ASSERT_TRUE(producer.ok());
    auto store = OpenStore();
    LedgerPublisher publisher(**producer, topics_.ledger);
    std::vector<OutboxEntry> staged;
    for (uint64_t seq : {1, 2}) {
      storage::StateBatch batch;
      staged.push_back(publisher.Stage(RecordWithSeq(seq), batch));
      ASSERT_TRUE(store->Commit(std::move(batch)).ok());
    }
    // What will be produced is the record as stored, in one message.
    EXPECT_EQ(staged[0].seq, 1u);
    ASSERT_EQ(staged[0].messages.size(), 1u);
    EXPECT_EQ(staged[0].messages[0].value,
              RecordWithSeq(1).SerializeAsString());
    publisher.Publish(std::move(staged[0]));
    EXPECT_EQ(PendingCount(*store), 2u);
  }
  // The next start publishes both again; readers keep one of each.
  auto producer = bus::Producer::Create(options_);
  ASSERT_TRUE(producer.ok());
  auto store = OpenStore();
  LedgerPublisher publisher(**producer, topics_.ledger);
  ASSERT_TRUE(publisher.RepublishPending(*store).ok());
  EXPECT_EQ(publisher.unacknowledged(), 2u);
  publisher.MaybeFlush(0, 10'000);
  EXPECT_EQ(publisher.unacknowledged(), 0u);
  EXPECT_EQ(publisher.pending(), 2u);  // acknowledged, copies not yet gone
  LedgerHistory history = ReadBack();
  EXPECT_EQ(history.records().size(), 2u);
  EXPECT_EQ(history.max_seq(), 2u);
  // Acknowledged copies go with the next batch; record 3's stays.
  storage::StateBatch batch;
  publisher.Stage(RecordWithSeq(3), batch);
  publisher.StageAcknowledged(batch);
  ASSERT_TRUE(store->Commit(std::move(batch)).ok());
  EXPECT_EQ(PendingCount(*store), 1u);
  EXPECT_EQ(publisher.pending(), 0u);  // 3 is staged, not yet published
}

// Each flush's deletion starts where the last one ended, so no copy is
// left behind and none that is not acknowledged goes, across many flushes
// and a restart (whose first deletion starts at 0).
TEST_F(OutboxTest, AcknowledgedCopiesGoFlushAfterFlushAndAfterARestart) {
  uint64_t seq = 0;
  {
    auto producer = bus::Producer::Create(options_);
    ASSERT_TRUE(producer.ok());
    auto store = OpenStore();
    LedgerPublisher publisher(**producer, topics_.ledger);
    for (int flush = 0; flush < 20; ++flush) {
      storage::StateBatch batch;
      publisher.StageAcknowledged(batch);
      std::vector<OutboxEntry> staged;
      for (int i = 0; i < 3; ++i) {
        staged.push_back(publisher.Stage(RecordWithSeq(++seq), batch));
      }
      ASSERT_TRUE(store->Commit(std::move(batch)).ok());
      EXPECT_EQ(PendingCount(*store), 3u) << "flush " << flush;
      for (OutboxEntry& entry : staged) publisher.Publish(std::move(entry));
      publisher.MaybeFlush(0, 10'000);
      ASSERT_EQ(publisher.unacknowledged(), 0u);
    }
    // The last three are acknowledged but their deletion is never staged.
  }
  auto producer = bus::Producer::Create(options_);
  ASSERT_TRUE(producer.ok());
  auto store = OpenStore();
  EXPECT_EQ(PendingCount(*store), 3u);
  LedgerPublisher publisher(**producer, topics_.ledger);
  ASSERT_TRUE(publisher.RepublishPending(*store).ok());
  publisher.MaybeFlush(0, 10'000);
  storage::StateBatch batch;
  publisher.StageAcknowledged(batch);
  publisher.Stage(RecordWithSeq(++seq), batch);
  ASSERT_TRUE(store->Commit(std::move(batch)).ok());
  EXPECT_EQ(PendingCount(*store), 1u);
  EXPECT_EQ(ReadBack().max_seq(), seq - 1);
}

// A deletion staged into a batch that was never committed is not lost:
// the next one starts at 0 again and takes those copies too.
TEST_F(OutboxTest, ADeletionThatWasNotCommittedIsStagedAgain) {
  auto producer = bus::Producer::Create(options_);
  ASSERT_TRUE(producer.ok());
  auto store = OpenStore();
  LedgerPublisher publisher(**producer, topics_.ledger);
  uint64_t seq = 0;
  auto stage_publish_flush = [&](int records) {
    storage::StateBatch batch;
    publisher.StageAcknowledged(batch);
    std::vector<OutboxEntry> staged;
    for (int i = 0; i < records; ++i) {
      staged.push_back(publisher.Stage(RecordWithSeq(++seq), batch));
    }
    ASSERT_TRUE(store->Commit(std::move(batch)).ok());
    for (OutboxEntry& entry : staged) publisher.Publish(std::move(entry));
    publisher.MaybeFlush(0, 10'000);
  };
  stage_publish_flush(2);  // 1, 2 acknowledged
  stage_publish_flush(2);  // deletes 1, 2; 3, 4 acknowledged
  EXPECT_EQ(PendingCount(*store), 2u);
  {
    storage::StateBatch lost;  // stages the deletion of 3, 4; never committed
    publisher.StageAcknowledged(lost);
    EXPECT_EQ(publisher.pending(), 0u);
  }
  publisher.OnStagedDeletionLost();
  EXPECT_EQ(publisher.pending(), 2u);
  stage_publish_flush(1);  // deletes 3, 4 after all; 5 acknowledged
  EXPECT_EQ(PendingCount(*store), 1u);
  storage::StateBatch batch;
  publisher.StageAcknowledged(batch);
  ASSERT_TRUE(store->Commit(std::move(batch)).ok());
  EXPECT_EQ(PendingCount(*store), 0u);
}

v1::DeadLetter Letter(int32_t partition, int64_t offset) {
  bus::Record original;
  original.topic = "flowsched.events";
  original.partition = partition;
  original.offset = offset;
  original.value = "not an event";
  return bus::MakeDeadLetter(original, absl::InvalidArgumentError("garbage"),
                             "graph-manager", 1'000'000);
}

TEST_F(OutboxTest, DeadLettersStagedBeforeACrashAreDelivered) {
  {
    // Letters 1 and 2 committed with their batch; only 1 was produced and
    // nothing acknowledged when the process "dies" (or stops in an outage).
    auto producer = bus::Producer::Create(options_);
    ASSERT_TRUE(producer.ok());
    auto store = OpenStore();
    DeadLetterOutbox outbox(**producer, topics_.dead_letters);
    storage::StateBatch batch;
    OutboxEntry first = outbox.Stage(1, Letter(0, 7), batch);
    outbox.Stage(2, Letter(1, 9), batch);
    ASSERT_TRUE(store->Commit(std::move(batch)).ok());
    ASSERT_EQ(first.messages.size(), 1u);
    EXPECT_EQ(first.messages[0].key, "flowsched.events/0");
    EXPECT_EQ(first.messages[0].value, Letter(0, 7).SerializeAsString());
    outbox.Publish(std::move(first));
    EXPECT_EQ(PendingCount(*store, storage::kDeadLetterPrefix), 2u);
    EXPECT_EQ(PendingCount(*store), 0u);  // nothing under the ledger's prefix
  }
  auto producer = bus::Producer::Create(options_);
  ASSERT_TRUE(producer.ok());
  auto store = OpenStore();
  DeadLetterOutbox outbox(**producer, topics_.dead_letters);
  auto last = outbox.RepublishPending(*store);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, 2u);  // the next letter is numbered 3
  EXPECT_EQ(outbox.unacknowledged(), 2u);
  outbox.MaybeFlush(0, 10'000);
  EXPECT_EQ(outbox.unacknowledged(), 0u);
  // At least once: letter 1 may come twice (the first producer's copy may
  // have gone out before it was destroyed); every letter comes.
  std::vector<v1::DeadLetter> letters = ReadLetters();
  ASSERT_GE(letters.size(), 2u);
  EXPECT_EQ(letters.back().offset(), 9);
  EXPECT_EQ(letters.back().partition(), 1);
  EXPECT_EQ(letters.back().reason(), "garbage");
  EXPECT_EQ(letters.back().original(), "not an event");
  EXPECT_EQ(letters.front().offset(), 7);
  // The acknowledged copies go with the next batch, whatever it holds.
  storage::StateBatch batch;
  outbox.StageAcknowledged(batch);
  ASSERT_TRUE(store->Commit(std::move(batch)).ok());
  EXPECT_EQ(PendingCount(*store, storage::kDeadLetterPrefix), 0u);
}

TEST_F(OutboxTest, ADamagedPendingLetterIsDataLoss) {
  auto producer = bus::Producer::Create(options_);
  ASSERT_TRUE(producer.ok());
  auto store = OpenStore();
  storage::StateBatch batch;
  batch.Put(storage::DeadLetterKey(4), "\xff\xff not a letter");
  ASSERT_TRUE(store->Commit(std::move(batch)).ok());
  DeadLetterOutbox outbox(**producer, topics_.dead_letters);
  auto last = outbox.RepublishPending(*store);
  ASSERT_FALSE(last.ok());
  EXPECT_EQ(last.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(last.status().message().find("pending dead letter 4"),
            std::string_view::npos)
      << last.status();
  EXPECT_EQ(outbox.unacknowledged(), 0u);
}

}  // namespace
}  // namespace flowsched::graph_manager
