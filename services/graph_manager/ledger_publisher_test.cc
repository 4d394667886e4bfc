#include "services/graph_manager/ledger_publisher.h"

#include <filesystem>
#include <memory>

#include "gtest/gtest.h"
#include "services/bus/consumer.h"
#include "services/bus/embedded_broker.h"
#include "services/bus/topics.h"
#include "services/graph_manager/state_rebuilder.h"
#include "storage/keys.h"

namespace flowsched::graph_manager {
namespace {

class LedgerPublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto broker = bus::EmbeddedBroker::Start(1, bus::DefaultTopicSpecs(topics_));
    ASSERT_TRUE(broker.ok()) << broker.status();
    broker_ = std::move(broker).value();
    options_.brokers = broker_->bootstrap_servers();
    dir_ = (std::filesystem::temp_directory_path() /
            ("flowsched-ledger-" + std::to_string(::getpid())))
               .string();
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<storage::StateStore> OpenStore() {
    auto store = storage::StateStore::Open(dir_, {});
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  size_t PendingCount(const storage::StateStore& store) {
    size_t count = 0;
    EXPECT_TRUE(store
                    .ScanPrefix(storage::kLedgerPrefix,
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

  bus::TopicNames topics_;
  std::unique_ptr<bus::EmbeddedBroker> broker_;
  bus::KafkaOptions options_;
  std::string dir_;
};

v1::LedgerRecord Record(uint64_t seq) {
  v1::LedgerRecord record;
  record.set_seq(seq);
  record.set_epoch(1);
  return record;
}

TEST_F(LedgerPublisherTest, ACrashBeforePublicationLosesNoRecord) {
  {
    // Staged and committed with the state, then the process "dies" before
    // publishing record 2.
    auto producer = bus::Producer::Create(options_);
    ASSERT_TRUE(producer.ok());
    auto store = OpenStore();
    LedgerPublisher publisher(**producer, topics_.ledger);
    for (uint64_t seq : {1, 2}) {
      storage::StateBatch batch;
      publisher.Stage(Record(seq), batch);
      ASSERT_TRUE(store->Commit(std::move(batch)).ok());
    }
    publisher.Publish(Record(1));
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
  LedgerHistory history = ReadBack();
  EXPECT_EQ(history.records().size(), 2u);
  EXPECT_EQ(history.max_seq(), 2u);
  // Acknowledged copies go with the next batch.
  storage::StateBatch batch;
  publisher.Stage(Record(3), batch);
  ASSERT_TRUE(store->Commit(std::move(batch)).ok());
  EXPECT_EQ(PendingCount(*store), 1u);
}

}  // namespace
}  // namespace flowsched::graph_manager
