#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flowsched/v1/dead_letter.pb.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/bus/consumer.h"
#include "services/bus/dead_letter_publisher.h"
#include "services/bus/embedded_broker.h"
#include "services/bus/kafka_options.h"
#include "services/bus/producer.h"
#include "services/bus/topics.h"
#include "services/common/clock.h"
#include "services/common/status_matchers.h"

namespace flowsched::bus {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using Steady = std::chrono::steady_clock;

// Polls until `count` records arrived or `timeout` passed.
std::vector<Record> ConsumeN(Consumer& consumer, size_t count,
                             std::chrono::milliseconds timeout) {
  std::vector<Record> records;
  const auto deadline = Steady::now() + timeout;
  while (records.size() < count && Steady::now() < deadline) {
    auto batch = consumer.Poll(count - records.size(), 200);
    EXPECT_THAT(batch, IsOk());
    if (!batch.ok()) {
      break;
    }
    for (Record& r : *batch) {
      records.push_back(std::move(r));
    }
  }
  return records;
}

std::vector<TopicPartitionOffset> AllPartitions(const std::string& topic,
                                                int partitions,
                                                int64_t offset) {
  std::vector<TopicPartitionOffset> tpos;
  for (int p = 0; p < partitions; ++p) {
    tpos.push_back({topic, p, offset});
  }
  return tpos;
}

class BusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto broker = EmbeddedBroker::Start(3, DefaultTopicSpecs(topics_));
    ASSERT_THAT(broker, IsOk());
    broker_ = std::move(broker).value();
    options_.brokers = broker_->bootstrap_servers();
    auto producer = Producer::Create(options_);
    ASSERT_THAT(producer, IsOk());
    producer_ = std::move(producer).value();
  }

  std::unique_ptr<Consumer> MakeConsumer() {
    auto consumer = Consumer::Create(options_, "bus-test");
    EXPECT_THAT(consumer, IsOk());
    return consumer.ok() ? std::move(consumer).value() : nullptr;
  }

  // Flushes the producer and reads back the one dead letter, checking that
  // it is keyed by its original's topic and partition.
  void ReadTheOnlyLetter(flowsched::v1::DeadLetter& letter) {
    ASSERT_THAT(producer_->Flush(10000), IsOk());
    auto consumer = MakeConsumer();
    ASSERT_NE(consumer, nullptr);
    ASSERT_THAT(consumer->Assign({{topics_.dead_letters, 0, kOffsetBeginning}}),
                IsOk());
    std::vector<Record> records =
        ConsumeN(*consumer, 1, std::chrono::seconds(10));
    ASSERT_EQ(records.size(), 1u);
    ASSERT_TRUE(letter.ParseFromString(records[0].value));
    EXPECT_EQ(records[0].key,
              absl::StrCat(letter.topic(), "/", letter.partition()));
  }

  TopicNames topics_ = TopicNames::WithPrefix("flowsched.");
  std::unique_ptr<EmbeddedBroker> broker_;
  KafkaOptions options_;
  std::unique_ptr<Producer> producer_;
};

TEST(BusTopicsTest, DefaultsAndPrefix) {
  TopicNames names;
  EXPECT_EQ(names.events, "flowsched.events");
  EXPECT_EQ(names.rounds, "flowsched.rounds");
  EXPECT_EQ(names.placements, "flowsched.placements");
  EXPECT_EQ(names.dead_letters, "flowsched.dead-letters");
  TopicNames prefixed = TopicNames::WithPrefix("t1.");
  EXPECT_EQ(prefixed.events, "t1.events");
  EXPECT_EQ(prefixed.dead_letters, "t1.dead-letters");
  EXPECT_EQ(prefixed.ledger, "t1.ledger");
  std::vector<TopicSpec> specs = DefaultTopicSpecs(names);
  ASSERT_EQ(specs.size(), 6u);
  EXPECT_EQ(specs[0].name, "flowsched.events");
  EXPECT_EQ(specs[0].partitions, 4);
  EXPECT_EQ(specs[1].partitions, 1);
  EXPECT_EQ(specs[2].partitions, 4);
  EXPECT_EQ(specs[3].partitions, 1);
  EXPECT_EQ(specs[4].name, "flowsched.ledger");
  EXPECT_EQ(specs[4].partitions, 1);
  EXPECT_EQ(specs[5].name, "flowsched.leader");
  EXPECT_EQ(specs[5].partitions, 1);
}

TEST(BusKafkaOptionsTest, BadExtraKeyIsInvalidArgument) {
  KafkaOptions options;
  options.brokers = "127.0.0.1:9";
  options.extra["no.such.setting"] = "1";
  EXPECT_THAT(Producer::Create(options),
              StatusIs(absl::StatusCode::kInvalidArgument, "no.such.setting"));
  EXPECT_THAT(Consumer::Create(options, "g"),
              StatusIs(absl::StatusCode::kInvalidArgument, "no.such.setting"));
  options.extra.clear();
  options.extra["linger.ms"] = "banana";
  EXPECT_THAT(Producer::Create(options),
              StatusIs(absl::StatusCode::kInvalidArgument, "linger.ms=banana"));
  EXPECT_THAT(Producer::Create(KafkaOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument, "brokers"));
}

TEST(BusKafkaOptionsTest, LegacyBrokerSettingsAndExtraOverride) {
  KafkaOptions options;
  options.brokers = "127.0.0.1:9";
  options.legacy_broker = true;
  auto conf = BuildKafkaConfig(options, {{"enable.idempotence", "true"}});
  ASSERT_THAT(conf, IsOk());
  EXPECT_EQ(*GetKafkaConfigValue(**conf, "api.version.request"), "false");
  EXPECT_EQ(*GetKafkaConfigValue(**conf, "broker.version.fallback"), "0.9.0.1");
  EXPECT_EQ(*GetKafkaConfigValue(**conf, "enable.idempotence"), "false");
  EXPECT_EQ(*GetKafkaConfigValue(**conf, "client.id"), "flowsched");
  // Every client turns Nagle's algorithm off (it delayed small writes).
  EXPECT_EQ(*GetKafkaConfigValue(**conf, "socket.nagle.disable"), "true");

  options.extra["enable.idempotence"] = "true";
  options.extra["socket.nagle.disable"] = "false";
  conf = BuildKafkaConfig(options, {});
  ASSERT_THAT(conf, IsOk());
  EXPECT_EQ(*GetKafkaConfigValue(**conf, "enable.idempotence"), "true");
  EXPECT_EQ(*GetKafkaConfigValue(**conf, "socket.nagle.disable"), "false");
}

TEST_F(BusTest, ProduceAndConsumeKeyedRecords) {
  constexpr int kRecords = 200;
  constexpr int kKeys = 10;
  for (int i = 0; i < kRecords; ++i) {
    ASSERT_THAT(producer_->Produce(topics_.events, kAnyPartition,
                                   fmt::format("key-{}", i % kKeys),
                                   fmt::format("{}", i)),
                IsOk());
  }
  ASSERT_THAT(producer_->Flush(10000), IsOk());

  auto consumer = MakeConsumer();
  ASSERT_NE(consumer, nullptr);
  const auto start = Steady::now();
  ASSERT_THAT(
      consumer->Assign(AllPartitions(topics_.events, 4, kOffsetBeginning)),
      IsOk());
  auto first = consumer->Poll(kRecords, 10000);
  ASSERT_THAT(first, IsOk());
  ASSERT_FALSE(first->empty());
  std::cout << "first batch of " << first->size() << " records after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   Steady::now() - start)
                   .count()
            << " ms\n";
  std::vector<Record> records = std::move(first).value();
  std::vector<Record> rest =
      ConsumeN(*consumer, kRecords - records.size(), std::chrono::seconds(10));
  records.insert(records.end(), rest.begin(), rest.end());
  ASSERT_EQ(records.size(), static_cast<size_t>(kRecords));

  std::map<std::string, int32_t> partition_of_key;
  std::map<int32_t, int64_t> last_offset;
  std::map<std::string, int> last_value_of_key;
  std::set<int> seen;
  for (const Record& r : records) {
    EXPECT_EQ(r.topic, topics_.events);
    EXPECT_GT(r.timestamp_ms, 0);
    auto [it, inserted] = partition_of_key.emplace(r.key, r.partition);
    EXPECT_EQ(it->second, r.partition) << "key " << r.key << " moved";
    auto off = last_offset.find(r.partition);
    if (off != last_offset.end()) {
      EXPECT_EQ(r.offset, off->second + 1) << "partition " << r.partition;
    }
    last_offset[r.partition] = r.offset;
    const int value = std::stoi(r.value);
    auto last = last_value_of_key.find(r.key);
    if (last != last_value_of_key.end()) {
      EXPECT_LT(last->second, value) << "order of key " << r.key;
    }
    last_value_of_key[r.key] = value;
    EXPECT_TRUE(seen.insert(value).second) << "duplicate " << value;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kRecords));
  // Ten keys over four partitions: murmur2 should use more than one.
  std::set<int32_t> used;
  for (const auto& [key, partition] : partition_of_key) {
    used.insert(partition);
  }
  EXPECT_GT(used.size(), 1u);
}

TEST_F(BusTest, AssignFromExplicitOffsetResumesThere) {
  for (int i = 0; i < 10; ++i) {
    ASSERT_THAT(
        producer_->Produce(topics_.rounds, 0, "round", fmt::format("r{}", i)),
        IsOk());
  }
  ASSERT_THAT(producer_->Flush(10000), IsOk());
  auto consumer = MakeConsumer();
  ASSERT_NE(consumer, nullptr);
  ASSERT_THAT(consumer->Assign({{topics_.rounds, 0, 4}}), IsOk());
  std::vector<Record> records =
      ConsumeN(*consumer, 6, std::chrono::seconds(10));
  ASSERT_EQ(records.size(), 6u);
  EXPECT_EQ(records.front().offset, 4);
  EXPECT_EQ(records.front().value, "r4");
  EXPECT_EQ(records.back().offset, 9);

  // Re-assigning replaces the position, even backwards.
  ASSERT_THAT(consumer->Assign({{topics_.rounds, 0, 7}}), IsOk());
  records = ConsumeN(*consumer, 3, std::chrono::seconds(10));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records.front().offset, 7);
  EXPECT_EQ(records.front().value, "r7");

  // kOffsetEnd waits for new records only.
  ASSERT_THAT(consumer->Assign({{topics_.rounds, 0, kOffsetEnd}}), IsOk());
  auto none = consumer->Poll(10, 500);
  ASSERT_THAT(none, IsOk());
  EXPECT_TRUE(none->empty());
  ASSERT_THAT(producer_->Produce(topics_.rounds, 0, "round", "r10"), IsOk());
  ASSERT_THAT(producer_->Flush(10000), IsOk());
  records = ConsumeN(*consumer, 1, std::chrono::seconds(10));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].offset, 10);
}

TEST_F(BusTest, GroupGivesThePartitionToOneMemberAndMovesItOnLeave) {
  // Two members of one group on the one-partition rounds topic: one holds
  // it and reads from the offset its listener chose; when that member
  // closes (leaves the group), the other gets it.
  KafkaOptions group_options = options_;
  group_options.extra = {
      {"session.timeout.ms", "3000"},
      {"heartbeat.interval.ms", "500"},
      {"partition.assignment.strategy", "cooperative-sticky"}};
  struct Member {
    std::unique_ptr<Consumer> consumer;
    bool holds = false;
    std::vector<Record> records;
  };
  std::array<Member, 2> members;
  for (Member& m : members) {
    auto consumer = Consumer::Create(group_options, "bus-test-group");
    ASSERT_THAT(consumer, IsOk());
    m.consumer = std::move(consumer).value();
    RebalanceListener listener;
    listener.start_offset = [](const std::string&, int32_t) {
      return int64_t{1};  // skips record 0
    };
    listener.changed = [&m](bool assigned,
                            const std::vector<TopicPartitionOffset>& parts) {
      if (!parts.empty()) m.holds = assigned;
    };
    ASSERT_THAT(m.consumer->Subscribe({topics_.rounds}, std::move(listener)),
                IsOk());
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_THAT(
        producer_->Produce(topics_.rounds, 0, "round", fmt::format("r{}", i)),
        IsOk());
  }
  ASSERT_THAT(producer_->Flush(10000), IsOk());
  const auto poll_until = [&](const std::function<bool()>& done) {
    const auto deadline = Steady::now() + std::chrono::seconds(20);
    while (!done() && Steady::now() < deadline) {
      for (Member& m : members) {
        if (m.consumer == nullptr) continue;
        auto records = m.consumer->Poll(10, 50);
        ASSERT_THAT(records, IsOk());
        for (Record& r : *records) m.records.push_back(std::move(r));
      }
    }
  };
  poll_until([&] {
    return (members[0].holds || members[1].holds) &&
           members[0].records.size() + members[1].records.size() >= 2;
  });
  ASSERT_NE(members[0].holds, members[1].holds) << "exactly one holder";
  Member& holder = members[0].holds ? members[0] : members[1];
  Member& other = members[0].holds ? members[1] : members[0];
  ASSERT_EQ(holder.records.size(), 2u);
  EXPECT_EQ(holder.records[0].value, "r1");
  EXPECT_TRUE(other.records.empty());

  holder.consumer.reset();  // closes: leaves the group
  poll_until([&] { return other.holds; });
  EXPECT_TRUE(other.holds) << "the partition never moved";
}

TEST_F(BusTest, WatermarksMatchProduced) {
  auto consumer = MakeConsumer();
  ASSERT_NE(consumer, nullptr);
  auto before = consumer->Watermarks(topics_.events, 2, 5000);
  ASSERT_THAT(before, IsOk());
  EXPECT_EQ(*before, std::make_pair(int64_t{0}, int64_t{0}));
  for (int i = 0; i < 5; ++i) {
    ASSERT_THAT(producer_->Produce(topics_.events, 2, "k", "v"), IsOk());
  }
  ASSERT_THAT(producer_->Flush(10000), IsOk());
  auto after = consumer->Watermarks(topics_.events, 2, 5000);
  ASSERT_THAT(after, IsOk());
  EXPECT_EQ(*after, std::make_pair(int64_t{0}, int64_t{5}));
  auto other = consumer->Watermarks(topics_.events, 1, 5000);
  ASSERT_THAT(other, IsOk());
  EXPECT_EQ(other->second, 0);
}

TEST_F(BusTest, PartitionCountReturnsCreatedCounts) {
  EXPECT_EQ(*producer_->PartitionCount(topics_.events, 5000), 4);
  EXPECT_EQ(*producer_->PartitionCount(topics_.rounds, 5000), 1);
  EXPECT_EQ(*producer_->PartitionCount(topics_.placements, 5000), 4);
  EXPECT_EQ(*producer_->PartitionCount(topics_.dead_letters, 5000), 1);
  EXPECT_THAT(producer_->PartitionCount("no-such-topic", 5000),
              StatusIs(absl::StatusCode::kNotFound, "no-such-topic"));
}

class FixedClock : public Clock {
 public:
  [[nodiscard]] int64_t NowMicros() const override { return 1234567; }
};

TEST_F(BusTest, DeadLetterPublisherProducesDecodableLetter) {
  FixedClock clock;
  DeadLetterPublisher publisher(*producer_, topics_.dead_letters,
                                "graph_manager", &clock);
  Record original{.topic = topics_.events,
                  .partition = 2,
                  .offset = 41,
                  .key = "task-7",
                  .value = std::string("\x01\x00\xff", 3),
                  .timestamp_ms = 1};
  ASSERT_THAT(
      publisher.Publish(original, absl::InvalidArgumentError("bad task id")),
      IsOk());
  EXPECT_EQ(publisher.published(), 1u);
  flowsched::v1::DeadLetter letter;
  ASSERT_NO_FATAL_FAILURE(ReadTheOnlyLetter(letter));
  EXPECT_EQ(letter.topic(), topics_.events);
  EXPECT_EQ(letter.partition(), 2);
  EXPECT_EQ(letter.offset(), 41);
  EXPECT_EQ(letter.key(), "task-7");
  EXPECT_EQ(letter.original(), original.value);
  EXPECT_EQ(letter.reason(), "bad task id");
  EXPECT_EQ(letter.code(), "INVALID_ARGUMENT");
  EXPECT_EQ(letter.service(), "graph_manager");
  EXPECT_EQ(letter.rejected_time_us(), 1234567);
  EXPECT_EQ(letter.key_size(), 6u);
  EXPECT_EQ(letter.original_size(), 3u);
}

TEST_F(BusTest, ALetterAboutANearlyFullRecordStillFitsInAMessage) {
  // Key and value of 999,950 bytes, under the producer's message.max.bytes
  // (1,000,000); the letter carrying them in full is over it, and the
  // producer refuses it (MSG_SIZE_TOO_LARGE) at every retry.
  Record original{.topic = topics_.events,
                  .partition = 0,
                  .offset = 5,
                  .key = std::string(20'000, 'k'),
                  .value = std::string(979'950, 'v')};
  ASSERT_THAT(
      producer_->Produce(topics_.events, 0, original.key, original.value),
      IsOk());
  DeadLetterPublisher publisher(*producer_, topics_.dead_letters, "test");
  ASSERT_THAT(
      publisher.Publish(original, absl::InvalidArgumentError("too big")),
      IsOk());
  flowsched::v1::DeadLetter letter;
  ASSERT_NO_FATAL_FAILURE(ReadTheOnlyLetter(letter));
  EXPECT_EQ(letter.key(), original.key.substr(0, kDeadLetterMaxKeyBytes));
  EXPECT_EQ(letter.key_size(), 20'000u);
  EXPECT_EQ(letter.original(),
            original.value.substr(0, kDeadLetterMaxOriginalBytes));
  EXPECT_EQ(letter.original_size(), 979'950u);
  EXPECT_EQ(letter.offset(), 5);
}

TEST_F(BusTest, BrokerDownThenUpLosesNothing) {
  constexpr int kRecords = 300;
  for (int i = 0; i < kRecords; ++i) {
    if (i == 100) {
      // Two of three brokers: some partition leaders become unreachable
      // (the mock cluster does not move leadership).
      ASSERT_THAT(broker_->SetBrokerDown(1), IsOk());
      ASSERT_THAT(broker_->SetBrokerDown(2), IsOk());
    }
    ASSERT_THAT(
        producer_->Produce(topics_.events, kAnyPartition,
                           fmt::format("key-{}", i % 16), fmt::format("{}", i)),
        IsOk());
  }
  const absl::Status while_down = producer_->Flush(1500);
  std::cout << "Flush while down: " << while_down
            << ", outstanding: " << producer_->OutstandingCount() << "\n";
  ASSERT_THAT(broker_->SetBrokerUp(1), IsOk());
  ASSERT_THAT(broker_->SetBrokerUp(2), IsOk());
  const auto start = Steady::now();
  ASSERT_THAT(producer_->Flush(15000), IsOk());
  std::cout << "Flush after up took "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   Steady::now() - start)
                   .count()
            << " ms\n";

  auto consumer = MakeConsumer();
  ASSERT_NE(consumer, nullptr);
  ASSERT_THAT(
      consumer->Assign(AllPartitions(topics_.events, 4, kOffsetBeginning)),
      IsOk());
  std::vector<Record> records =
      ConsumeN(*consumer, kRecords, std::chrono::seconds(10));
  // Anything beyond kRecords would be a duplicate from a retried request.
  auto extra = consumer->Poll(10, 500);
  ASSERT_THAT(extra, IsOk());
  records.insert(records.end(), extra->begin(), extra->end());
  std::set<int> seen;
  for (const Record& r : records) {
    EXPECT_TRUE(seen.insert(std::stoi(r.value)).second)
        << "duplicate " << r.value;
  }
  EXPECT_EQ(records.size(), static_cast<size_t>(kRecords));
  EXPECT_EQ(seen.size(), static_cast<size_t>(kRecords));
}

TEST_F(BusTest, InjectedProduceErrorsAreRetried) {
  // NOT_LEADER_FOR_PARTITION (6) is retriable: librdkafka refreshes metadata
  // and resends, so the caller never sees it.
  ASSERT_THAT(broker_->PushRequestErrors(0, {6, 6, 6}), IsOk());
  for (int i = 0; i < 20; ++i) {
    ASSERT_THAT(
        producer_->Produce(topics_.rounds, 0, "k", fmt::format("{}", i)),
        IsOk());
  }
  ASSERT_THAT(producer_->Flush(10000), IsOk());
  auto consumer = MakeConsumer();
  ASSERT_NE(consumer, nullptr);
  auto marks = consumer->Watermarks(topics_.rounds, 0, 5000);
  ASSERT_THAT(marks, IsOk());
  EXPECT_EQ(marks->second, 20);
  EXPECT_THAT(broker_->PushRequestErrors(0, {100000}),
              StatusIs(absl::StatusCode::kInvalidArgument, "100000"));
}

TEST_F(BusTest, ControlLinesParse) {
  EXPECT_THAT(ApplyControlLine(*broker_, "down 1"), IsOk());
  EXPECT_THAT(ApplyControlLine(*broker_, "up 1"), IsOk());
  EXPECT_THAT(ApplyControlLine(*broker_, "  errors 1 6 2 "), IsOk());
  EXPECT_THAT(ApplyControlLine(*broker_, ""), IsOk());
  EXPECT_THAT(ApplyControlLine(*broker_, "# comment"), IsOk());
  for (const char* bad :
       {"down", "down x", "up 99", "sideways 1", "errors 0 6", "errors 0 6 0",
        "errors -1 6 1", "errors 0 999999 1", "down 1 2"}) {
    EXPECT_THAT(ApplyControlLine(*broker_, bad),
                StatusIs(absl::StatusCode::kInvalidArgument, ""))
        << bad;
  }
}

void WriteControl(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
  }
  std::filesystem::rename(tmp, path);
}

bool WaitUntil(const std::function<bool()>& predicate,
               std::chrono::milliseconds timeout) {
  const auto deadline = Steady::now() + timeout;
  while (Steady::now() < deadline) {
    if (predicate()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return predicate();
}

TEST(BusServeEmbeddedBrokerTest, ControlFileIsApplied) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      fmt::format("bus_test_serve_{}", getpid());
  std::filesystem::create_directories(dir);
  EmbeddedBrokerOptions options;
  options.broker_count = 2;
  options.topics = TopicNames::WithPrefix("serve.");
  options.bootstrap_file = (dir / "bootstrap").string();
  const std::string control = options.bootstrap_file + ".control";

  std::atomic<bool> stop{false};
  absl::Status serve_status = absl::UnknownError("not finished");
  std::thread server(
      [&] { serve_status = ServeEmbeddedBroker(options, stop); });
  ASSERT_TRUE(
      WaitUntil([&] { return std::filesystem::exists(options.bootstrap_file); },
                std::chrono::seconds(5)));
  std::string bootstrap;
  {
    std::ifstream in(options.bootstrap_file);
    std::getline(in, bootstrap);
  }
  EXPECT_THAT(bootstrap, HasSubstr("127.0.0.1:"));
  KafkaOptions producer_options;
  producer_options.brokers = bootstrap;
  auto producer = Producer::Create(producer_options);
  ASSERT_THAT(producer, IsOk());
  EXPECT_EQ(*(*producer)->PartitionCount("serve.events", 5000), 4);

  WriteControl(control, "down -1\nthis is not a command\nerrors x y z\n");
  ASSERT_TRUE(WaitUntil([&] { return !std::filesystem::exists(control); },
                        std::chrono::seconds(2)));
  EXPECT_THAT((*producer)->PartitionCount("serve.events", 1000), Not(IsOk()));

  WriteControl(control, "up -1\n");
  ASSERT_TRUE(WaitUntil([&] { return !std::filesystem::exists(control); },
                        std::chrono::seconds(2)));
  // Reconnect backoff is capped at 2 s.
  absl::StatusOr<int> count = absl::UnknownError("unset");
  ASSERT_TRUE(WaitUntil(
      [&] {
        count = (*producer)->PartitionCount("serve.events", 1000);
        return count.ok();
      },
      std::chrono::seconds(8)))
      << count.status();
  EXPECT_EQ(*count, 4);

  producer->reset();
  stop = true;
  server.join();
  EXPECT_THAT(serve_status, IsOk());
  EXPECT_FALSE(std::filesystem::exists(options.bootstrap_file));
  std::filesystem::remove_all(dir);
}

bool OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) {
    return false;
  }
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::filesystem::path candidate = std::filesystem::path(dir) / program;
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) {
      return true;
    }
  }
  return false;
}

TEST_F(BusTest, KcatListsTopics) {
  if (!OnPath("kcat")) {
    GTEST_SKIP() << "kcat is not on PATH";
  }
  const std::string command =
      fmt::format("kcat -b {} -L -m 10 2>&1", options_.brokers);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"),
                                             &pclose);
  ASSERT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0) {
    output.append(buffer.data(), n);
  }
  EXPECT_THAT(output, HasSubstr("3 brokers"));
  EXPECT_THAT(output,
              HasSubstr("topic \"flowsched.events\" with 4 partitions"));
  EXPECT_THAT(output,
              HasSubstr("topic \"flowsched.rounds\" with 1 partitions"));
  EXPECT_THAT(output,
              HasSubstr("topic \"flowsched.placements\" with 4 partitions"));
  EXPECT_THAT(output,
              HasSubstr("topic \"flowsched.dead-letters\" with 1 partitions"));
}

}  // namespace
}  // namespace flowsched::bus
