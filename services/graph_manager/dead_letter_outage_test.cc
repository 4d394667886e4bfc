// A graph manager that rejects an event while the broker refuses every
// Produce request, then stops, loses no dead letter: the letter commits
// with the offset that passes its record ("d/<seq>"), and the next start
// publishes it. (Before the outbox, the letter lived only in memory after
// the batch committed, and a stop or crash in the outage lost it.) Nor
// does a damaged store lose its pending letters: the rebuild takes them
// from the store it moved aside.

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "services/bus/consumer.h"
#include "services/bus/dead_letter_publisher.h"
#include "services/bus/embedded_broker.h"
#include "services/bus/producer.h"
#include "services/bus/topics.h"
#include "services/common/clock.h"
#include "services/graph_manager/graph_manager.h"
#include "services/graph_manager/status_report.h"
#include "storage/keys.h"

namespace flowsched::graph_manager {
namespace {

constexpr int16_t kProduceApi = 0;
constexpr int kNotLeaderForPartition = 6;  // retriable: the client retries
constexpr char kGarbage[] = "\xff\xfe not a ClusterEvent";

class DeadLetterOutageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto broker =
        bus::EmbeddedBroker::Start(1, bus::DefaultTopicSpecs(topics_));
    ASSERT_TRUE(broker.ok()) << broker.status();
    broker_ = std::move(broker).value();
    options_.kafka.brokers = broker_->bootstrap_servers();
    options_.topics = topics_;
    options_.data_dir =
        (std::filesystem::temp_directory_path() /
         ("flowsched-letter-outage-" + std::to_string(::getpid())))
            .string();
    std::filesystem::remove_all(options_.data_dir);
    // Deterministic cutting, due only after 1,000 events: no round is
    // published, so the outage delays nothing but the letter.
    options_.cut_every_events = 1000;
    options_.status_interval_ms = 50;
  }
  void TearDown() override { std::filesystem::remove_all(options_.data_dir); }

  // Starts a graph manager, calls `before_run`, runs it until `done` holds
  // for its status (or 30 s), then stops it cleanly.
  void RunUntil(
      const std::function<bool(const v1::GraphManagerStatus&)>& done,
      const std::string& what,
      const std::function<void()>& before_run = [] {}) {
    auto manager = GraphManager::Create(options_, clock_);
    ASSERT_TRUE(manager.ok()) << manager.status();
    before_run();
    std::atomic<bool> stop{false};
    absl::Status result;
    std::thread runner([&] { result = (*manager)->Run(stop); });
    bool reached = false;
    for (int i = 0; i < 600 && !reached; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      auto status = ReadStatusFile(options_.data_dir + "/status.json");
      reached = status.ok() && done(*status);
    }
    stop = true;
    runner.join();
    EXPECT_TRUE(reached) << what;
    EXPECT_TRUE(result.ok()) << result;
  }

  // Pending letters in the (closed) store: original offset of each.
  std::vector<int64_t> PendingLetterOffsets() {
    std::vector<int64_t> offsets;
    auto store = storage::StateStore::Open(options_.data_dir + "/state", {});
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return offsets;
    EXPECT_TRUE((*store)
                    ->ScanPrefix(storage::kDeadLetterPrefix,
                                 [&](std::string_view, std::string_view value) {
                                   v1::DeadLetter letter;
                                   EXPECT_TRUE(letter.ParseFromString(
                                       std::string(value)));
                                   offsets.push_back(letter.offset());
                                   return absl::OkStatus();
                                 })
                    .ok());
    return offsets;
  }

  std::vector<v1::DeadLetter> ReadLetters() {
    std::vector<v1::DeadLetter> letters;
    auto consumer = bus::Consumer::Create(options_.kafka, "letters-test");
    EXPECT_TRUE(consumer.ok());
    if (!consumer.ok()) return letters;
    auto marks = (*consumer)->Watermarks(topics_.dead_letters, 0, 5000);
    EXPECT_TRUE(marks.ok()) << marks.status();
    if (!marks.ok()) return letters;
    EXPECT_TRUE((*consumer)->Assign({{topics_.dead_letters, 0}}).ok());
    for (int i = 0;
         i < 100 && static_cast<int64_t>(letters.size()) < marks->second; ++i) {
      auto records = (*consumer)->Poll(100, 100);
      EXPECT_TRUE(records.ok());
      for (const bus::Record& record : *records) {
        EXPECT_TRUE(letters.emplace_back().ParseFromString(record.value));
      }
    }
    return letters;
  }

  // At least once: the dead-letter topic holds one letter or more, each
  // the graph manager's about events partition 0 at `offset`.
  void ExpectOnlyLettersFor(int64_t offset, std::string_view original) {
    std::vector<v1::DeadLetter> letters = ReadLetters();
    ASSERT_FALSE(letters.empty()) << "the letter was lost";
    for (const v1::DeadLetter& letter : letters) {
      EXPECT_EQ(letter.topic(), topics_.events);
      EXPECT_EQ(letter.partition(), 0);
      EXPECT_EQ(letter.offset(), offset);
      EXPECT_EQ(letter.original(), original);
      EXPECT_EQ(letter.service(), "graph-manager");
    }
  }

  bus::TopicNames topics_;
  std::unique_ptr<bus::EmbeddedBroker> broker_;
  GraphManagerOptions options_;
  SystemClock clock_;
};

TEST_F(DeadLetterOutageTest, ALetterRejectedDuringAnOutageSurvivesTheStop) {
  {
    auto producer = bus::Producer::Create(options_.kafka);
    ASSERT_TRUE(producer.ok());
    ASSERT_TRUE(
        (*producer)->Produce(topics_.events, 0, "garbage", kGarbage).ok());
    ASSERT_TRUE((*producer)->Flush(10'000).ok());
  }
  RunUntil(
      [](const v1::GraphManagerStatus& s) {
        return s.events_rejected() == 1 && s.dead_letters_pending() == 1;
      },
      "the event rejected and its letter produced, unacknowledged",
      [this] {
        // The graph manager reads the garbage event only in Run, after
        // this: the broker refuses every Produce request from here on.
        ASSERT_TRUE(broker_
                        ->PushRequestErrors(
                            kProduceApi,
                            std::vector<int>(10'000, kNotLeaderForPartition))
                        .ok());
      });
  // Stopped in the outage: the letter is still pending in the store, with
  // the offset that passed its record.
  EXPECT_EQ(PendingLetterOffsets(), std::vector<int64_t>{0});

  // The broker is back: the next start publishes the letter (once or more),
  // and the stop after its acknowledgement drops the pending copy.
  ASSERT_TRUE(broker_->ClearRequestErrors(kProduceApi).ok());
  RunUntil(
      [](const v1::GraphManagerStatus& s) {
        return s.events_rejected() == 1 && s.dead_letters_pending() == 0;
      },
      "the pending letter acknowledged after the restart");
  EXPECT_EQ(PendingLetterOffsets(), std::vector<int64_t>{});
  ExpectOnlyLettersFor(0, kGarbage);
}

TEST_F(DeadLetterOutageTest, APendingLetterThatDoesNotParseMeansADamagedStore) {
  RunUntil([](const v1::GraphManagerStatus& s) { return s.epoch() == 1; },
           "a first start");
  {
    auto store = storage::StateStore::Open(options_.data_dir + "/state", {});
    ASSERT_TRUE(store.ok()) << store.status();
    storage::StateBatch batch;
    batch.Put(storage::DeadLetterKey(1), "\xff\xff not a letter");
    ASSERT_TRUE((*store)->Commit(std::move(batch)).ok());
  }
  // Moved aside like any damaged store (never deleted) and rebuilt from the
  // ledger; the service starts instead of failing at every restart.
  RunUntil([](const v1::GraphManagerStatus& s) { return s.epoch() == 2; },
           "a start after the damage");
  int moved_aside = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(options_.data_dir)) {
    moved_aside +=
        entry.path().filename().string().starts_with("state.damaged-");
  }
  EXPECT_EQ(moved_aside, 1);
  EXPECT_EQ(PendingLetterOffsets(), std::vector<int64_t>{});
}

TEST_F(DeadLetterOutageTest, ALetterPendingInADamagedStoreSurvivesTheRebuild) {
  RunUntil([](const v1::GraphManagerStatus& s) { return s.epoch() == 1; },
           "a first start");
  {
    // A store that broke while a letter was not yet acknowledged (d/8),
    // damaged by a pending copy that no longer parses (d/7). The start
    // finds the damage before it reaches d/8 (copies are read in seq
    // order), so only the salvage can still publish that letter.
    bus::Record original;
    original.topic = topics_.events;
    original.partition = 0;
    original.offset = 42;
    original.value = "salvage me";
    const v1::DeadLetter letter =
        bus::MakeDeadLetter(original, absl::InvalidArgumentError("garbage"),
                            "graph-manager", 1'000'000);
    auto store = storage::StateStore::Open(options_.data_dir + "/state", {});
    ASSERT_TRUE(store.ok()) << store.status();
    storage::StateBatch batch;
    batch.Put(storage::DeadLetterKey(7), "\xff\xff not a letter");
    batch.Put(storage::DeadLetterKey(8), letter.SerializeAsString());
    ASSERT_TRUE((*store)->Commit(std::move(batch)).ok());
  }
  // The rebuild replays no record of that letter (the ledger holds none),
  // so only the moved-aside store still has it: it is staged in the new
  // store, published and, once acknowledged, dropped there.
  RunUntil(
      [](const v1::GraphManagerStatus& s) {
        return s.epoch() == 2 && s.dead_letters_pending() == 0;
      },
      "the rebuild, and the salvaged letter acknowledged");
  EXPECT_EQ(PendingLetterOffsets(), std::vector<int64_t>{});
  ExpectOnlyLettersFor(42, "salvage me");
}

}  // namespace
}  // namespace flowsched::graph_manager
