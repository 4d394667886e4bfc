// GraphManager in-process: the whole service on a bus::MemoryBus and a
// temp data directory, driven pass by pass with RunOnce(), no broker. The
// tests play the event sources and the solver worker: they append events,
// read the rounds, answer with placements records built the way the solver
// worker builds them, and check what the manager published (rounds, ledger,
// dead letters) and stored (StateReader).

#include "services/graph_manager/graph_manager.h"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flowsched/v1/dead_letter.pb.h"
#include "flowsched/v1/events.pb.h"
#include "flowsched/v1/ledger.pb.h"
#include "flowsched/v1/placements.pb.h"
#include "flowsched/v1/rounds.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/bus/memory_bus.h"
#include "services/bus/topics.h"
#include "services/codec/decision_codec.h"
#include "services/codec/round_parts.h"
#include "services/common/clock.h"
#include "services/common/status_matchers.h"
#include "services/core/decision.h"
#include "services/core/decision_builder.h"
#include "services/graph_manager/ledger_parts.h"
#include "services/graph_manager/state_reader.h"
#include "services/graph_manager/state_rebuilder.h"
#include "services/graph_manager/status_report.h"
#include "tests/integration/client_events.h"

namespace flowsched::graph_manager {
namespace {

using ::flowsched::testing::IsOk;

constexpr uint64_t kInProcessWorkerEpoch = 7;
constexpr int32_t kInProcessPlacementPartitions = 4;

core::Decision PlaceTask(uint64_t task, uint64_t job, uint64_t machine) {
  return {.task = TaskId(task),
          .job = JobId(job),
          .machine = MachineId(machine),
          .action = core::Action::kPlace};
}

v1::ClusterEvent TaskFinishedEvent(uint64_t job, uint64_t task) {
  v1::ClusterEvent event;
  event.mutable_task_finished()->set_job_id(job);
  event.mutable_task_finished()->set_task_id(task);
  return event;
}

class GraphManagerInProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.data_dir =
        (std::filesystem::temp_directory_path() /
         ("flowsched-gm-inprocess-" + std::to_string(::getpid()) + "-" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name()))
            .string();
    std::filesystem::remove_all(options_.data_dir);
    options_.topics = topics_;
    // Idle passes wait a little for input instead of spinning.
    options_.poll_timeout_ms = 2;
    options_.status_interval_ms = 0;  // status.json at every pass
  }
  void TearDown() override {
    manager_.reset();
    std::filesystem::remove_all(options_.data_dir);
  }

  void Start() {
    auto manager = GraphManager::Create(options_, clock_, bus_);
    ASSERT_THAT(manager.status(), IsOk());
    manager_ = std::move(manager).value();
  }
  // A clean stop (what Run() does when its flag is set), then gone.
  void StopManager() {
    manager_->Stop();
    manager_.reset();
  }

  // Runs passes until `done` holds (checked after each) or 20 s passed.
  // Outboxes flush every 100 ms, so a ledger record or a dead letter takes
  // that long to show up.
  void RunUntil(const std::function<bool()>& done, const std::string& what) {
    ASSERT_NE(manager_, nullptr) << "the manager did not start";
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      const absl::Status pass = manager_->RunOnce();
      ASSERT_THAT(pass, IsOk()) << what;
      if (done()) return;
    }
    FAIL() << "timed out waiting for: " << what;
  }
  // Runs passes for `ms` milliseconds, so that anything the manager would
  // do on its own (a round, a flush) had the time to happen.
  void RunFor(int ms) {
    ASSERT_NE(manager_, nullptr) << "the manager did not start";
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
      ASSERT_THAT(manager_->RunOnce(), IsOk());
    }
  }

  // Appends an event to events partition 0 (the one deterministic mode
  // reads); returns its offset.
  int64_t AppendEvent(v1::ClusterEvent event) {
    ++events_appended_;
    event.set_event_id("e" + std::to_string(events_appended_));
    event.set_event_time_us(1'000'000 * events_appended_);
    event.set_source("graph_manager_test");
    return AppendEventBytes(event.SerializeAsString());
  }
  int64_t AppendEventBytes(const std::string& bytes) {
    auto offset = bus_.Append(topics_.events, 0, "key", bytes);
    EXPECT_THAT(offset.status(), IsOk());
    return offset.value_or(-1);
  }

  // The whole rounds published so far, in order (RoundAssembler, as the
  // solver worker reads them).
  std::vector<v1::SolverRound> Rounds() const {
    std::vector<v1::SolverRound> rounds;
    codec::RoundAssembler assembler;
    for (const bus::Record& record : bus_.Read(topics_.rounds, 0)) {
      v1::SolverRound part;
      EXPECT_TRUE(part.ParseFromString(record.value));
      if (assembler.Add(std::move(part)) ==
          codec::RoundAssembler::Progress::kComplete) {
        rounds.push_back(assembler.TakeRound());
      }
    }
    return rounds;
  }

  // The ledger as readers see it (LedgerHistory: slices joined, first
  // record of each seq, fencing), by seq.
  std::map<uint64_t, v1::LedgerRecord> Ledger() const {
    LedgerAssembler assembler;
    LedgerHistory history;
    for (const bus::Record& record : bus_.Read(topics_.ledger, 0)) {
      v1::LedgerRecord slice;
      EXPECT_TRUE(slice.ParseFromString(record.value));
      std::optional<v1::LedgerRecord> whole = assembler.Add(std::move(slice));
      if (whole.has_value()) history.Add(std::move(*whole));
    }
    return history.records();
  }
  // Every RoundApplied step of the ledger, in order.
  std::vector<v1::RoundApplied> AppliedRounds() const {
    std::vector<v1::RoundApplied> rounds;
    for (const auto& [seq, record] : Ledger()) {
      for (const v1::LedgerStep& step : record.steps()) {
        if (step.has_round()) rounds.push_back(step.round());
      }
    }
    return rounds;
  }
  bool RoundApplied(uint64_t round_id) const {
    for (const v1::RoundApplied& round : AppliedRounds()) {
      if (round.round_id() == round_id) return true;
    }
    return false;
  }
  // Round id -> events applied before the ledger recorded its cut.
  std::map<uint64_t, int64_t> EventsBeforeCuts() const {
    std::map<uint64_t, int64_t> cuts;
    int64_t events = 0;
    for (const auto& [seq, record] : Ledger()) {
      for (const v1::LedgerStep& step : record.steps()) {
        if (step.has_events()) {
          events += step.events().to_offset() - step.events().from_offset();
        }
      }
      if (record.has_cut()) cuts[record.cut().round_id()] = events;
    }
    return cuts;
  }
  int64_t EventsInLedger() const {
    int64_t events = 0;
    for (const auto& [seq, record] : Ledger()) {
      for (const v1::LedgerStep& step : record.steps()) {
        if (step.has_events()) {
          events += step.events().to_offset() - step.events().from_offset();
        }
      }
    }
    return events;
  }

  std::vector<v1::DeadLetter> DeadLetters() const {
    std::vector<v1::DeadLetter> letters;
    for (const bus::Record& record : bus_.Read(topics_.dead_letters, 0)) {
      v1::DeadLetter letter;
      EXPECT_TRUE(letter.ParseFromString(record.value));
      letters.push_back(std::move(letter));
    }
    return letters;
  }

  // The solver worker's answer to `round`: each decision on the partition
  // of its machine, then a RoundComplete marker on every partition.
  void Answer(const v1::SolverRound& round,
              const std::vector<core::Decision>& decisions) {
    std::vector<uint32_t> per_partition(kInProcessPlacementPartitions, 0);
    for (const core::Decision& d : decisions) {
      const uint64_t machine =
          d.machine.value() != 0 ? d.machine.value() : d.previous.value();
      const auto partition =
          static_cast<int32_t>(machine % kInProcessPlacementPartitions);
      v1::PlacementRecord record;
      v1::PlacementDecision* out = record.mutable_decision();
      out->set_round_id(round.round_id());
      out->set_epoch(kInProcessWorkerEpoch);
      out->set_graph_epoch(round.epoch());
      codec::EncodeDecision(d, *out);
      out->set_idempotency_key(
          core::IdempotencyKey(RoundId(round.round_id()), d.task));
      ASSERT_THAT(bus_.Append(topics_.placements, partition,
                              "machine/" + std::to_string(machine),
                              record.SerializeAsString())
                      .status(),
                  IsOk());
      ++per_partition[static_cast<size_t>(partition)];
    }
    for (int32_t p = 0; p < kInProcessPlacementPartitions; ++p) {
      AnswerMarker(round, p, per_partition[static_cast<size_t>(p)],
                   decisions.size());
    }
  }
  void AnswerMarker(const v1::SolverRound& round, int32_t partition,
                    uint32_t partition_decisions, size_t total_decisions) {
    v1::PlacementRecord record;
    v1::RoundComplete* marker = record.mutable_round_complete();
    marker->set_round_id(round.round_id());
    marker->set_epoch(kInProcessWorkerEpoch);
    marker->set_graph_epoch(round.epoch());
    marker->set_solver_epoch(round.solver_epoch());
    marker->set_partition(static_cast<uint32_t>(partition));
    marker->set_partition_decisions(partition_decisions);
    marker->set_total_decisions(static_cast<uint32_t>(total_decisions));
    marker->set_partition_count(kInProcessPlacementPartitions);
    marker->set_algorithm("test");
    ASSERT_THAT(bus_.Append(topics_.placements, partition, "round-complete",
                            record.SerializeAsString())
                    .status(),
                IsOk());
  }

  // The stored state as a restart would restore it (read-only, beside the
  // running manager).
  StoredState Stored() const {
    auto reader = StateReader::Open(options_.data_dir);
    EXPECT_THAT(reader.status(), IsOk());
    // value(): a failed read ends the test (throws), never a null access.
    auto stored = reader.value()->Load();
    EXPECT_THAT(stored.status(), IsOk());
    return std::move(stored).value();
  }
  std::string StoredDigest() const {
    auto reader = StateReader::Open(options_.data_dir);
    EXPECT_THAT(reader.status(), IsOk());
    if (!reader.ok()) return "";
    auto digest = (*reader)->Digest();
    EXPECT_THAT(digest.status(), IsOk());
    return digest.value_or("");
  }
  v1::GraphManagerStatus Status() const {
    auto status = ReadStatusFile(options_.data_dir + "/status.json");
    EXPECT_THAT(status.status(), IsOk());
    return status.value_or(v1::GraphManagerStatus());
  }

  // A machine (id 1, 4 slots) and job 10 of tasks 100 and 101, applied, and
  // the first round (a snapshot with them) published.
  void StartWithTwoTasks() {
    AppendEvent(flowsched::testing::MachineAdded(1));
    AppendEvent(flowsched::testing::JobSubmitted(10, 100, 2));
    Start();
    RunUntil([&] { return !Rounds().empty(); }, "the first round");
  }

  bus::TopicNames topics_;
  bus::MemoryBus bus_{bus::DefaultTopicSpecs(topics_)};
  SystemClock clock_;
  GraphManagerOptions options_;
  std::unique_ptr<GraphManager> manager_;
  int64_t events_appended_ = 0;
};

TEST_F(GraphManagerInProcessTest, EventsInASnapshotRoundOut) {
  StartWithTwoTasks();
  const std::vector<v1::SolverRound> rounds = Rounds();
  ASSERT_EQ(rounds.size(), 1U);
  const v1::SolverRound& round = rounds[0];
  EXPECT_EQ(round.round_id(), 1U);
  EXPECT_EQ(round.epoch(), 1U);  // the first start's epoch
  EXPECT_TRUE(round.snapshot());
  EXPECT_FALSE(round.deterministic());
  // The snapshot is the stored network: one change per node and per arc.
  const StoredState stored = Stored();
  EXPECT_EQ(stored.state.machines().size(), 1U);
  EXPECT_EQ(stored.state.tasks().size(), 2U);
  EXPECT_GT(stored.network.node_count(), 3U);
  EXPECT_EQ(static_cast<size_t>(round.changes_size()),
            stored.network.node_count() + stored.network.arc_count());
  // The ledger: the start's epoch claim, the events, the cut.
  EXPECT_EQ(EventsInLedger(), 2);
  EXPECT_EQ(EventsBeforeCuts(), (std::map<uint64_t, int64_t>{{1, 2}}));
}

TEST_F(GraphManagerInProcessTest, AnswerIsAppliedAndRecordedInTheLedger) {
  StartWithTwoTasks();
  const v1::SolverRound first = Rounds().at(0);
  Answer(first, {PlaceTask(100, 10, 1)});
  RunUntil([&] { return RoundApplied(1); }, "round 1 in the ledger");

  const std::vector<v1::RoundApplied> applied = AppliedRounds();
  ASSERT_EQ(applied.size(), 1U);
  EXPECT_EQ(applied[0].round_id(), 1U);
  EXPECT_EQ(applied[0].graph_epoch(), first.epoch());
  EXPECT_EQ(applied[0].applied(), 1U);
  EXPECT_EQ(applied[0].stale(), 0U);
  ASSERT_EQ(applied[0].decisions_size(), 1);
  EXPECT_TRUE(applied[0].decisions(0).applied());
  EXPECT_EQ(applied[0].decisions(0).decision().task_id(), 100U);

  const StoredState stored = Stored();
  EXPECT_EQ(stored.state.tasks().at(TaskId(100)).machine, MachineId(1));
  EXPECT_FALSE(stored.state.tasks().at(TaskId(101)).running());
  EXPECT_EQ(stored.meta.rounds_completed(), 1U);
  EXPECT_EQ(stored.meta.decisions_applied(), 1U);
  // The state changed, so the next round follows: a delta on round 1.
  RunUntil([&] { return Rounds().size() == 2; }, "round 2");
  const v1::SolverRound second = Rounds().at(1);
  EXPECT_FALSE(second.snapshot());
  EXPECT_EQ(second.base_round_id(), 1U);
  EXPECT_GT(second.changes_size(), 0);
}

TEST_F(GraphManagerInProcessTest, MalformedEventsAreDeadLetteredUnapplied) {
  StartWithTwoTasks();
  const std::string digest_before = StoredDigest();
  const int64_t garbage = AppendEventBytes("\xff\xfe not a ClusterEvent");
  // Decodes, but machine 1 exists already.
  const int64_t duplicate = AppendEvent(flowsched::testing::MachineAdded(1));
  RunUntil([&] { return DeadLetters().size() == 2; }, "two dead letters");

  const std::vector<v1::DeadLetter> letters = DeadLetters();
  EXPECT_EQ(letters[0].topic(), topics_.events);
  EXPECT_EQ(letters[0].offset(), garbage);
  EXPECT_EQ(letters[0].code(), "INVALID_ARGUMENT");
  EXPECT_EQ(letters[0].original(), "\xff\xfe not a ClusterEvent");
  EXPECT_EQ(letters[0].service(), "graph-manager");
  EXPECT_EQ(letters[1].offset(), duplicate);
  EXPECT_EQ(letters[1].code(), "ALREADY_EXISTS");
  EXPECT_NE(letters[1].reason().find("machine 1"), std::string::npos)
      << letters[1].reason();
  // Consumed, counted, and nothing else.
  EXPECT_EQ(StoredDigest(), digest_before);
  const StoredState stored = Stored();
  EXPECT_EQ(stored.meta.events_rejected(), 2U);
  EXPECT_EQ(stored.meta.events_applied(), 2U);
  EXPECT_EQ(EventsInLedger(), 4);
  RunFor(200);
  EXPECT_EQ(Rounds().size(), 1U);  // no change, no round
  EXPECT_EQ(Status().dead_letters_pending(), 0U);
}

TEST_F(GraphManagerInProcessTest, DeadLetterIsPublishedAgainAfterFailures) {
  StartWithTwoTasks();
  // Every delivery fails: the outbox keeps the letter and tries again.
  bus_.set_fail_delivery(true);
  AppendEventBytes("not an event");
  RunUntil([&] { return bus_.failed_deliveries() >= 2; },
           "two failed deliveries");
  EXPECT_TRUE(DeadLetters().empty());
  EXPECT_EQ(Status().dead_letters_pending(), 1U);
  // Produce refused as well.
  bus_.set_refuse_produce(true);
  RunFor(300);
  EXPECT_TRUE(DeadLetters().empty());
  bus_.set_refuse_produce(false);
  bus_.set_fail_delivery(false);
  RunUntil([&] { return !DeadLetters().empty(); }, "the letter");
  EXPECT_EQ(DeadLetters().size(), 1U);
  RunUntil([&] { return Status().dead_letters_pending() == 0; },
           "its copy dropped");
}

TEST_F(GraphManagerInProcessTest, DeterministicRoundsAreCutAtTheNthEvent) {
  options_.cut_every_events = 3;
  AppendEvent(flowsched::testing::MachineAdded(1));
  for (uint64_t job = 10; job < 16; ++job) {  // events 2 to 7
    AppendEvent(flowsched::testing::JobSubmitted(job, job * 10, 1));
  }
  Start();
  RunUntil([&] { return Rounds().size() == 1; }, "round 1");
  RunFor(200);
  // Events wait while a round is in flight.
  EXPECT_EQ(Rounds().size(), 1U);
  EXPECT_EQ(EventsInLedger(), 3);
  EXPECT_TRUE(Rounds()[0].deterministic());
  EXPECT_TRUE(Rounds()[0].snapshot());

  // A round that changed the state is followed by another at the same
  // place in the log.
  Answer(Rounds()[0], {PlaceTask(100, 10, 1)});
  RunUntil([&] { return Rounds().size() == 2; }, "round 2");
  EXPECT_EQ(EventsInLedger(), 3);
  // One that changed nothing lets events flow again, up to the next cut.
  Answer(Rounds()[1], {});
  RunUntil([&] { return Rounds().size() == 3; }, "round 3");
  Answer(Rounds()[2], {});
  RunUntil([&] { return EventsInLedger() == 7; }, "the seventh event");
  RunFor(200);
  EXPECT_EQ(Rounds().size(), 3U);  // one event short of the next cut
  EXPECT_EQ(EventsBeforeCuts(),
            (std::map<uint64_t, int64_t>{{1, 3}, {2, 3}, {3, 6}}));
  for (const v1::SolverRound& round : Rounds()) {
    EXPECT_TRUE(round.deterministic());
  }
}

TEST_F(GraphManagerInProcessTest,
       RestartRestoresTheStateAndAppliesNoRoundTwice) {
  StartWithTwoTasks();
  Answer(Rounds().at(0), {PlaceTask(100, 10, 1)});
  RunUntil([&] { return RoundApplied(1); }, "round 1 applied");
  // Round 2 (the delta the placement caused) answered too, so that no
  // round is in flight at the stop and the restart sends a snapshot at once.
  RunUntil([&] { return Rounds().size() == 2; }, "round 2");
  Answer(Rounds().at(1), {});
  RunUntil([&] { return RoundApplied(2); }, "round 2 applied");
  StopManager();
  const std::string digest_at_stop = Status().digest_at_stop();
  EXPECT_FALSE(digest_at_stop.empty());
  EXPECT_EQ(StoredDigest(), digest_at_stop);
  const size_t rounds_before = Rounds().size();

  // The answer is still in the placements topic; the stored offsets are
  // past it.
  Start();
  RunUntil([&] { return Rounds().size() > rounds_before; },
           "the snapshot after the restart");
  EXPECT_EQ(Status().digest_at_start(), digest_at_stop);
  EXPECT_EQ(Status().epoch(), 2U);
  const v1::SolverRound snapshot = Rounds().back();
  EXPECT_TRUE(snapshot.snapshot());
  EXPECT_EQ(snapshot.epoch(), 2U);
  EXPECT_EQ(snapshot.round_id(), 3U);
  RunFor(300);
  EXPECT_EQ(AppliedRounds().size(), 2U);
  const StoredState stored = Stored();
  EXPECT_EQ(stored.meta.rounds_completed(), 2U);
  EXPECT_EQ(stored.meta.decisions_applied(), 1U);
  EXPECT_EQ(stored.state.tasks().at(TaskId(100)).machine, MachineId(1));
}

TEST_F(GraphManagerInProcessTest,
       RoundAnsweredAcrossAnUncleanRestartAppliesOnce) {
  StartWithTwoTasks();
  const v1::SolverRound first = Rounds().at(0);
  // Half the answer (the decision and two of four markers), read and
  // committed as held; then the manager goes away without a clean stop.
  v1::PlacementRecord record;
  {
    const core::Decision place = PlaceTask(100, 10, 1);
    v1::PlacementDecision* out = record.mutable_decision();
    out->set_round_id(first.round_id());
    out->set_epoch(kInProcessWorkerEpoch);
    out->set_graph_epoch(first.epoch());
    codec::EncodeDecision(place, *out);
    out->set_idempotency_key(core::IdempotencyKey(RoundId(1), place.task));
  }
  ASSERT_THAT(bus_.Append(topics_.placements, 1, "machine/1",
                          record.SerializeAsString())
                  .status(),
              IsOk());
  AnswerMarker(first, 0, 0, 1);
  AnswerMarker(first, 1, 1, 1);
  RunFor(300);
  EXPECT_FALSE(RoundApplied(1));
  manager_.reset();

  Start();
  AnswerMarker(first, 2, 0, 1);
  AnswerMarker(first, 3, 0, 1);
  RunUntil([&] { return RoundApplied(1); }, "round 1 applied after restart");
  RunFor(300);
  const std::vector<v1::RoundApplied> applied = AppliedRounds();
  ASSERT_EQ(applied.size(), 1U);
  EXPECT_EQ(applied[0].applied(), 1U);
  EXPECT_EQ(applied[0].graph_epoch(), 1U);  // cut before the restart
  EXPECT_EQ(Stored().state.tasks().at(TaskId(100)).machine, MachineId(1));
}

TEST_F(GraphManagerInProcessTest, EventsDeletedBeforeTheyWereAppliedStopIt) {
  StartWithTwoTasks();
  StopManager();
  const std::string digest_at_stop = Status().digest_at_stop();
  // While it is stopped, three machines arrive and the broker's retention
  // drops the first two of them (offsets 2 and 3).
  for (uint64_t m = 2; m <= 4; ++m) {
    AppendEvent(flowsched::testing::MachineAdded(m));
  }
  ASSERT_THAT(bus_.DeleteBefore(topics_.events, 0, 4), IsOk());
  Start();
  absl::Status pass = absl::OkStatus();
  for (int i = 0; i < 100 && pass.ok(); ++i) pass = manager_->RunOnce();
  EXPECT_EQ(pass.code(), absl::StatusCode::kDataLoss) << pass;
  EXPECT_THAT(std::string(pass.message()),
              ::testing::HasSubstr("no longer holds offsets 2 to 3"));
  manager_.reset();
  // Nothing after the gap was committed: the store is as at the stop.
  EXPECT_EQ(StoredDigest(), digest_at_stop);
  EXPECT_EQ(Stored().state.machines().size(), 1U);
}

TEST_F(GraphManagerInProcessTest, DecisionForAFinishedTaskIsRecordedStale) {
  StartWithTwoTasks();
  // Task 100 finishes while the solver works on round 1.
  AppendEvent(TaskFinishedEvent(10, 100));
  RunUntil([&] { return EventsInLedger() == 3; }, "the TaskFinished event");
  Answer(Rounds().at(0), {PlaceTask(100, 10, 1), PlaceTask(101, 10, 1)});
  RunUntil([&] { return RoundApplied(1); }, "round 1 applied");

  const std::vector<v1::RoundApplied> applied = AppliedRounds();
  ASSERT_EQ(applied.size(), 1U);
  EXPECT_EQ(applied[0].applied(), 1U);
  EXPECT_EQ(applied[0].stale(), 1U);
  bool saw_stale = false;
  for (const v1::LedgerDecision& d : applied[0].decisions()) {
    if (d.decision().task_id() == 100) {
      saw_stale = true;
      EXPECT_FALSE(d.applied());
      EXPECT_FALSE(d.stale_reason().empty());
    } else {
      EXPECT_TRUE(d.applied());
    }
  }
  EXPECT_TRUE(saw_stale);
  const StoredState stored = Stored();
  EXPECT_FALSE(stored.state.tasks().contains(TaskId(100)));
  EXPECT_EQ(stored.state.tasks().at(TaskId(101)).machine, MachineId(1));
  EXPECT_EQ(stored.meta.decisions_stale(), 1U);
}

}  // namespace
}  // namespace flowsched::graph_manager
