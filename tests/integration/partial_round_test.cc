// A graph manager SIGKILLed while it holds part of a round's answer: the
// placements records of the round in flight live only in its memory until
// every partition's RoundComplete marker arrived. A restart must read them
// again and complete the round as soon as the rest arrives, not wait for
// the round timeout and re-cut (which drops an answer consumers may already
// act on). The round timeout is set to 60 s, so only a restart that read
// the parts again completes the round within the 10 s allowed.
//
// An undecodable record inside the held part is dead-lettered once: the
// restart reads it again, but its letter was staged in the batch that read
// it, and the stored meta says so.
//
// No solver worker answers here: the answer is forged (like
// solver_failover_test's) with the round's id, the graph manager epoch that
// cut it and the current solver epoch, the three things the collector
// checks; decisions are checked against the state, not the round.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flowsched/v1/dead_letter.pb.h"
#include "flowsched/v1/placements.pb.h"
#include "flowsched/v1/rounds.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/integration/pipeline_fixture.h"

namespace flowsched::testing {
namespace {

constexpr int kPlacementPartitions = 4;  // bus::DefaultTopicSpecs
constexpr int kRoundTimeoutMs = 60'000;
constexpr int kCompleteWithinS = 10;

class PartialRoundTest : public PipelineTest {
 protected:
  // Starts the graph manager alone (as `flowsched up` would, but with a
  // long round timeout) and waits for its status with a new epoch.
  v1::GraphManagerStatus StartGraphManager(uint64_t previous_epoch) {
    std::filesystem::remove(dir_ + "/status.json");
    CommandResult started = Shell(absl::StrCat(
        "(", FLOWSCHED_BINARY, " graph-manager --data-dir ", dir_,
        " --round-timeout-ms ", kRoundTimeoutMs, " ", broker_flags_, " >> ",
        dir_, "/logs/graph-manager.log 2>&1 & echo $! > ", dir_,
        "/pids/graph-manager.pid)"));
    EXPECT_EQ(started.exit_code, 0) << started.err;
    return WaitForStatus(
        [&](const auto& s) { return s.epoch() > previous_epoch; }, 30,
        "the graph manager to start");
  }

  // Produces one record per value, in order, to `partition`.
  void Produce(int partition, const std::vector<std::string>& values) {
    std::string files;
    for (const std::string& value : values) {
      const std::string path =
          absl::StrCat(dir_, "/forged-", ++forged_, ".bin");
      std::ofstream(path, std::ios::binary) << value;
      files += " " + path;
    }
    CommandResult produced =
        Shell(absl::StrCat(KCAT_BINARY, " -P -b ", Bootstrap(),
                           " -t flowsched.placements -p ", partition, files));
    ASSERT_EQ(produced.exit_code, 0) << produced.err;
  }

  // The last round on the rounds topic (one part: the network is tiny).
  v1::SolverRound LastRound() {
    CommandResult consumed =
        Shell(absl::StrCat(KCAT_BINARY, " -C -q -e -b ", Bootstrap(),
                           " -t flowsched.rounds -p 0 -o -1 -c 1 -f '%s'"));
    EXPECT_EQ(consumed.exit_code, 0) << consumed.err;
    v1::SolverRound round;
    EXPECT_TRUE(round.ParseFromString(consumed.out));
    return round;
  }

  v1::PlacementRecord Marker(const v1::SolverRound& round, uint64_t epoch,
                             int partition, uint32_t partition_decisions) {
    v1::PlacementRecord record;
    v1::RoundComplete* marker = record.mutable_round_complete();
    marker->set_round_id(round.round_id());
    marker->set_epoch(epoch);
    marker->set_graph_epoch(round.epoch());
    marker->set_partition(static_cast<uint32_t>(partition));
    marker->set_partition_decisions(partition_decisions);
    marker->set_total_decisions(1);
    marker->set_partition_count(kPlacementPartitions);
    marker->set_algorithm("forged");
    marker->set_solver_epoch(epoch);
    return record;
  }

  // Dead letters about placements records: (partition, offset) each.
  std::vector<std::pair<int32_t, int64_t>> PlacementLetters() {
    CommandResult letters =
        Flowsched("tail --topic dead-letters --from-beginning --idle-ms 1500");
    EXPECT_EQ(letters.exit_code, 0) << letters.err;
    std::vector<std::pair<int32_t, int64_t>> found;
    std::istringstream in(letters.out);
    std::string line;
    while (std::getline(in, line)) {
      v1::DeadLetter letter;
      EXPECT_TRUE(
          google::protobuf::util::JsonStringToMessage(line, &letter).ok())
          << line;
      if (letter.topic() != "flowsched.placements") continue;
      EXPECT_EQ(letter.code(), "INVALID_ARGUMENT") << line;
      found.emplace_back(letter.partition(), letter.offset());
    }
    return found;
  }

  int forged_ = 0;
};

TEST_F(PartialRoundTest, RestartCompletesTheRoundItHeldPartsOf) {
  // A worker answered the first round: its epoch is the current solver
  // epoch, which the forged answer carries.
  v1::GraphManagerStatus status = WaitForStatus(
      [](const auto& s) {
        return s.solver_epoch() != 0 && s.rounds_completed() >= 1 &&
               !s.round_in_flight();
      },
      30, "the first round answered by the solver worker");
  const uint64_t solver_epoch = status.solver_epoch();
  KillService("solver-worker");
  KillService("graph-manager");
  CommandResult machines =
      Flowsched("generate --what machines --machines 1 --slots 2");
  ASSERT_EQ(machines.exit_code, 0) << machines.err;
  CommandResult job = Flowsched(
      "generate --what jobs --jobs 1 --tasks-per-job 1 --first-job-id 1 "
      "--first-task-id 1 --seed 1");
  ASSERT_EQ(job.exit_code, 0) << job.err;
  Submit(machines.out + job.out);

  status = StartGraphManager(status.epoch());
  status = WaitForStatus(
      [](const auto& s) {
        return s.machines() == 1 && s.tasks() == 1 && s.round_in_flight();
      },
      30, "the machine and the task applied, a round in flight");
  const v1::SolverRound round = LastRound();
  ASSERT_EQ(round.epoch(), status.epoch()) << round.ShortDebugString();
  ASSERT_EQ(round.solver_epoch(), solver_epoch);
  const std::map<uint64_t, uint64_t> placements = TaskPlacements();
  ASSERT_EQ(placements.size(), 1u);
  const uint64_t task = placements.begin()->first;
  ASSERT_EQ(placements.begin()->second, 0u) << "the task is placed already";
  CommandResult machine_list = Flowsched("inspect machines");
  ASSERT_EQ(machine_list.exit_code, 0) << machine_list.err;
  std::istringstream machine_lines(machine_list.out);
  std::string header;
  std::getline(machine_lines, header);
  uint64_t machine = 0;
  machine_lines >> machine;
  ASSERT_NE(machine, 0u) << machine_list.out;

  // Partition 0's part of the answer: the decision, an undecodable record
  // (an unterminated varint), the marker, then a record of another worker
  // epoch. That one is fenced, so the status counting it shows that the
  // batch that read the part was committed.
  v1::PlacementRecord decision;
  v1::PlacementDecision* place = decision.mutable_decision();
  place->set_round_id(round.round_id());
  place->set_epoch(solver_epoch);
  place->set_graph_epoch(round.epoch());
  place->set_job_id(1);
  place->set_task_id(task);
  place->set_machine_id(machine);
  place->set_action(v1::ACTION_PLACE);
  place->set_idempotency_key(absl::StrCat(round.round_id(), "/", task));
  const uint64_t fenced_before = status.results_fenced();
  Produce(0, {decision.SerializeAsString(), std::string(4, '\xff'),
              Marker(round, solver_epoch, 0, 1).SerializeAsString(),
              Marker(round, solver_epoch + 1000, 0, 0).SerializeAsString()});
  // The undecodable record's letter commits with that batch and is
  // published after it; the kill waits until the broker acknowledged it
  // and its pending copy is deleted (killed before, the restart would
  // publish the same letter again: at least once).
  status = WaitForStatus(
      [&](const auto& s) {
        return s.results_fenced() > fenced_before &&
               s.dead_letters_pending() == 0;
      },
      30, "the graph manager to read partition 0's part");
  ASSERT_TRUE(status.round_in_flight());

  KillService("graph-manager");
  status = StartGraphManager(status.epoch());
  const uint64_t completed_before = status.rounds_completed();
  const auto rest_sent = std::chrono::steady_clock::now();
  for (int p = 1; p < kPlacementPartitions; ++p) {
    Produce(p, {Marker(round, solver_epoch, p, 0).SerializeAsString()});
  }
  status = WaitForStatus(
      [&](const auto& s) {
        return s.rounds_completed() > completed_before &&
               s.tasks_running() == 1;
      },
      kCompleteWithinS, "the round to complete after the restart");
  ASSERT_GT(status.rounds_completed(), completed_before);
  const double waited_s = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - rest_sent)
                              .count();
  std::printf("round applied %.1f s after the other markers were sent\n",
              waited_s);
  EXPECT_EQ(status.rounds_timed_out(), 0u);
  EXPECT_EQ(TaskPlacements()[task], machine);

  // Applied once: a further restart reads none of the round again.
  const uint64_t completed = status.rounds_completed();
  const uint64_t applied = status.decisions_applied();
  KillService("graph-manager");
  status = StartGraphManager(status.epoch());
  std::this_thread::sleep_for(std::chrono::seconds(1));
  status = WaitForStatus([](const auto&) { return true; }, 5, "the status");
  EXPECT_EQ(status.rounds_completed(), completed);
  EXPECT_EQ(status.decisions_applied(), applied);
  EXPECT_EQ(status.tasks_running(), 1u);

  // Read twice (before the first restart, and after it from the held
  // offset; the second restart starts past it), dead-lettered once
  // (GraphManagerMeta.placement_letters_through).
  const std::vector<std::pair<int32_t, int64_t>> letters = PlacementLetters();
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_EQ(letters[0].first, 0);
}

}  // namespace
}  // namespace flowsched::testing
