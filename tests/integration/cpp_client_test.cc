// The C++ client against `flowsched up` on 127.0.0.1: machines and a job
// published with EventPublisher, rounds received with PlacementSubscriber.
// Every task placed exactly once on a published machine, an invalid event
// refused locally, and a restarted subscriber of the same group not given
// the rounds it already committed (while a new group is given them all),
// and on_stale reporting decisions that really went stale.
// Built twice: on the embedded broker and on Kafka 0.9 (KAFKA09).

#include <signal.h>

#include <map>
#include <set>
#include <string>

#include "clients/cpp/event_publisher.h"
#include "clients/cpp/placement_subscriber.h"
#include "gtest/gtest.h"
#include "tests/integration/client_events.h"
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
    ASSERT_TRUE((*publisher)->Publish(MachineAdded(m)).ok());
  }
  v1::ClusterEvent job = JobSubmitted(1, 1, kTasks);
  job.mutable_job_submitted()->set_name("cpp-client");
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

// A decision really goes stale: the solver worker is paused (SIGSTOP)
// while a round placing a job is in flight, both machines are removed, and
// the worker resumes; its answer places tasks on machines that are gone,
// which the graph manager rejects. A placements-only subscriber with
// on_stale gets the round at once and, after it, a report of exactly those
// decisions (the ones a ledger-confirmed subscriber gets in Round::stale).
TEST_F(CppClientTest, OnStaleReportsDecisionsRejectedAfterDelivery) {
  auto publisher = client::EventPublisher::Create(Kafka());
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  for (uint64_t m = 1; m <= 2; ++m) {
    ASSERT_TRUE((*publisher)->Publish(MachineAdded(m)).ok());
  }
  ASSERT_TRUE((*publisher)->Flush(30'000).ok());
  v1::GraphManagerStatus status = WaitForStatus(
      [](const auto& s) {
        return s.machines() == 2 && s.rounds_completed() > 0 &&
               !s.round_in_flight();
      },
      20, "the machines applied and rounds settled");
  const uint64_t published = status.rounds_published();

  const int worker = ServicePid("solver-worker");
  ASSERT_GT(worker, 1);
  ASSERT_EQ(::kill(worker, SIGSTOP), 0);
  struct Resume {
    int pid;
    ~Resume() { ::kill(pid, SIGCONT); }
  } resume{worker};
  ASSERT_TRUE((*publisher)->Publish(JobSubmitted(1, 1, 4)).ok());
  ASSERT_TRUE((*publisher)->Flush(30'000).ok());
  WaitForStatus(
      [&](const auto& s) {
        return s.tasks() == 4 && s.round_in_flight() &&
               s.rounds_published() > published;
      },
      10, "a round with the job in flight");
  for (uint64_t m = 1; m <= 2; ++m) {
    v1::ClusterEvent removed;
    removed.mutable_machine_removed()->set_machine_id(m);
    ASSERT_TRUE((*publisher)->Publish(removed).ok());
  }
  ASSERT_TRUE((*publisher)->Flush(30'000).ok());
  status = WaitForStatus([](const auto& s) { return s.machines() == 0; }, 10,
                         "the machines removed while the solver is paused");
  ASSERT_TRUE(status.round_in_flight());
  ASSERT_EQ(::kill(worker, SIGCONT), 0);
  status = WaitForStatus([](const auto& s) { return s.decisions_stale() > 0; },
                         10, "the paused round's decisions rejected");

  // Placements only, with on_stale: what was delivered, then reported.
  std::set<std::string> delivered;
  std::set<std::string> reported;
  std::set<uint64_t> delivered_rounds;
  int reports = 0;
  client::SubscriberOptions options;
  options.kafka = Kafka();
  options.group = "cpp-it-stale";
  options.on_stale = [&](const client::StaleReport& report) {
    ++reports;
    EXPECT_TRUE(delivered_rounds.contains(report.round_id))
        << "round " << report.round_id << " reported before its delivery";
    EXPECT_FALSE(report.stale.empty());
    for (const auto& [d, reason] : report.stale) {
      EXPECT_TRUE(delivered.contains(d.idempotency_key()));
      EXPECT_TRUE(reported.insert(d.idempotency_key()).second);
      EXPECT_FALSE(reason.empty());
    }
    return absl::OkStatus();
  };
  auto sub = client::PlacementSubscriber::Create(
      options, [&](const client::Round& round) {
        delivered_rounds.insert(round.round_id);
        EXPECT_TRUE(round.stale.empty());
        for (const v1::PlacementDecision& d : round.decisions) {
          delivered.insert(d.idempotency_key());
        }
        return absl::OkStatus();
      });
  ASSERT_TRUE(sub.ok()) << sub.status();
  auto all_reported = [&] {
    return reported.size() == status.decisions_stale();
  };
  ASSERT_TRUE((*sub)->Run(all_reported, 15'000).ok());
  ASSERT_TRUE((*sub)->Close().ok());
  EXPECT_EQ(reported.size(), status.decisions_stale());
  EXPECT_EQ(reported.size(), 4u);  // every task was placed on a machine gone
  EXPECT_EQ(reports, 1);           // one round went stale
  EXPECT_EQ((*sub)->stats().stale_reports, 1u);

  // The ledger-confirmed view of the same rounds: the same decisions stale.
  std::set<std::string> confirmed_stale;
  client::SubscriberOptions confirm;
  confirm.kafka = Kafka();
  confirm.group = "cpp-it-stale-ledger";
  confirm.confirm_with_ledger = true;
  auto ledger_sub = client::PlacementSubscriber::Create(
      confirm, [&](const client::Round& round) {
        for (const auto& [d, reason] : round.stale) {
          confirmed_stale.insert(d.idempotency_key());
        }
        return absl::OkStatus();
      });
  ASSERT_TRUE(ledger_sub.ok()) << ledger_sub.status();
  ASSERT_TRUE((*ledger_sub)
                  ->Run([&] { return confirmed_stale == reported; }, 15'000)
                  .ok());
  EXPECT_EQ(confirmed_stale, reported);

  // The same group again: the report was committed, not made again.
  int again = 0;
  options.on_stale = [&again](const client::StaleReport&) {
    ++again;
    return absl::OkStatus();
  };
  auto restarted = client::PlacementSubscriber::Create(
      options, [](const client::Round&) { return absl::OkStatus(); });
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  ASSERT_TRUE((*restarted)->Run([] { return false; }, 2'000).ok());
  EXPECT_EQ(again, 0);
}

}  // namespace
}  // namespace flowsched::testing
