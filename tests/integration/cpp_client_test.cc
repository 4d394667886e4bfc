// The C++ client against `flowsched up` on 127.0.0.1: machines and a job
// published with EventPublisher, rounds received with PlacementSubscriber.
// Every task placed exactly once on a published machine, an invalid event
// refused locally, and a restarted subscriber of the same group not given
// the rounds it already committed (while a new group is given them all).
// Built twice: on the embedded broker and on Kafka 0.9 (KAFKA09).

#include <map>
#include <set>
#include <string>

#include "clients/cpp/event_publisher.h"
#include "clients/cpp/placement_subscriber.h"
#include "gtest/gtest.h"
#include "tests/integration/pipeline_fixture.h"

namespace flowsched::testing {
namespace {

constexpr uint64_t kMachines = 3;
constexpr uint64_t kTasks = 6;

class CppClientTest : public PipelineTest {
 protected:
  CppClientTest() { up_flags_ = "--policy cpu-memory"; }

  bus::KafkaOptions Kafka() const {
    bus::KafkaOptions options;
    options.brokers = Bootstrap();
    options.legacy_broker = OnKafka09();
    return options;
  }

  // Rounds seen by one subscriber run.
  struct Seen {
    std::map<uint64_t, int> places;        // task -> ACTION_PLACE count
    std::map<uint64_t, uint64_t> machine;  // task -> machine
    std::set<uint64_t> rounds;
    std::set<std::string> keys;
    int other_actions = 0;
    size_t stale = 0;
    size_t confirmed_rounds = 0;
  };

  // Subscribes as `group` until `until` holds or timeout_ms passed.
  Seen Receive(const std::string& group, int timeout_ms,
               const std::function<bool(const Seen&)>& until,
               bool confirm_with_ledger = false) {
    Seen seen;
    client::SubscriberOptions options;
    options.kafka = Kafka();
    options.group = group;
    options.confirm_with_ledger = confirm_with_ledger;
    auto sub = client::PlacementSubscriber::Create(
        options, [&seen](const client::Round& round) {
          EXPECT_TRUE(seen.rounds.insert(round.round_id).second)
              << "round " << round.round_id << " delivered twice";
          seen.stale += round.stale.size();
          seen.confirmed_rounds += round.confirmed_by_ledger ? 1 : 0;
          for (const v1::PlacementDecision& d : round.decisions) {
            EXPECT_TRUE(seen.keys.insert(d.idempotency_key()).second);
            if (d.action() == v1::ACTION_PLACE) {
              ++seen.places[d.task_id()];
              seen.machine[d.task_id()] = d.machine_id();
            } else {
              ++seen.other_actions;
            }
          }
          return absl::OkStatus();
        });
    EXPECT_TRUE(sub.ok()) << sub.status();
    if (!sub.ok()) return seen;
    absl::StatusOr<int> run =
        (*sub)->Run([&] { return until(seen); }, timeout_ms);
    EXPECT_TRUE(run.ok()) << run.status();
    EXPECT_TRUE((*sub)->Close().ok());
    return seen;
  }
};

TEST_F(CppClientTest, PublishesWorkloadAndReceivesEveryPlacementOnce) {
  auto publisher = client::EventPublisher::Create(Kafka());
  ASSERT_TRUE(publisher.ok()) << publisher.status();

  v1::ClusterEvent invalid;
  invalid.mutable_machine_added()->set_task_slots(4);  // machine_id 0
  absl::Status refused = (*publisher)->Publish(invalid);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("machine_id"), std::string::npos) << refused;

  for (uint64_t m = 1; m <= kMachines; ++m) {
    v1::ClusterEvent event;
    auto* added = event.mutable_machine_added();
    added->set_machine_id(m);
    added->set_rack("r1");
    added->set_task_slots(4);
    added->mutable_capacity()->set_cpu_millis(8000);
    added->mutable_capacity()->set_memory_bytes(int64_t{16} << 30);
    ASSERT_TRUE((*publisher)->Publish(event).ok());
  }
  v1::ClusterEvent job;
  job.mutable_job_submitted()->set_job_id(1);
  job.mutable_job_submitted()->set_name("cpp-client");
  for (uint64_t t = 1; t <= kTasks; ++t) {
    auto* task = job.mutable_job_submitted()->add_tasks();
    task->set_task_id(t);
    task->mutable_request()->set_cpu_millis(1000);
    task->mutable_request()->set_memory_bytes(int64_t{1} << 30);
  }
  ASSERT_TRUE((*publisher)->Publish(job).ok());
  ASSERT_TRUE((*publisher)->Flush(30'000).ok());

  auto all_placed = [](const Seen& s) { return s.places.size() == kTasks; };
  Seen first = Receive("cpp-it", 45'000, all_placed);
  ASSERT_EQ(first.places.size(), kTasks);
  EXPECT_EQ(first.other_actions, 0);
  for (uint64_t t = 1; t <= kTasks; ++t) {
    EXPECT_EQ(first.places[t], 1) << "task " << t;
    EXPECT_GE(first.machine[t], 1u);
    EXPECT_LE(first.machine[t], kMachines);
  }
  const uint64_t last_round = *first.rounds.rbegin();

  // Same group again: resumes after the committed offsets.
  Seen again = Receive("cpp-it", 3'000, [](const Seen&) { return false; });
  EXPECT_TRUE(again.places.empty());
  for (uint64_t r : again.rounds) EXPECT_GT(r, last_round);

  // A new group reads from the beginning: the same placements.
  Seen other = Receive("cpp-it-other", 20'000, all_placed);
  EXPECT_EQ(other.machine, first.machine);

  // Confirmed by the ledger: the same placements, as the graph manager
  // applied them (none stale here: the machines have room for all).
  Seen confirmed = Receive("cpp-it-ledger", 20'000, all_placed, true);
  EXPECT_EQ(confirmed.machine, first.machine);
  EXPECT_EQ(confirmed.stale, 0u);
  EXPECT_EQ(confirmed.confirmed_rounds, confirmed.rounds.size());
  EXPECT_GT(confirmed.confirmed_rounds, 0u);
}

}  // namespace
}  // namespace flowsched::testing
