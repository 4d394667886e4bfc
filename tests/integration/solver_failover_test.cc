// Solver worker failover through the real processes (issue #5 item 7):
// `flowsched up --solver-workers 2` runs two workers in one consumer group;
// one holds the rounds partition and is the current solver epoch at the
// graph manager. SIGKILL it: the standby must take over (new tasks get
// placed) within 15 s. An old instance that comes back must not get
// anything applied: a paused worker resumed after a takeover stands down,
// and an answer forged with the killed worker's epoch is fenced. In the end
// every task is placed exactly once and no machine is over its slots.

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "flowsched/v1/placements.pb.h"
#include "flowsched/v1/rounds.pb.h"
#include "tests/integration/pipeline_fixture.h"

namespace flowsched::testing {
namespace {

constexpr uint64_t kMachines = 20, kSlots = 4, kTasksPerJob = 8;

std::string ReadLog(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class SolverFailoverTest : public PipelineTest {
 protected:
  SolverFailoverTest() { up_flags_ = "--solver-workers 2"; }

  // Waits until the worker logged its (new) epoch.
  uint64_t WaitForWorkerEpoch(const std::string& name, uint64_t not_this) {
    for (int i = 0; i < 300; ++i) {
      const uint64_t epoch = WorkerEpoch(name);
      if (epoch != 0 && epoch != not_this) return epoch;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << name << " never logged a new epoch";
    return 0;
  }

  // The worker whose epoch the graph manager considers current.
  std::string ActiveWorker(uint64_t solver_epoch) {
    std::string name = SolverWorkerWithEpoch(solver_epoch);
    if (name.empty()) {
      ADD_FAILURE() << "no worker has the current epoch " << solver_epoch;
    }
    return name;
  }

  void SubmitJob(uint64_t job) {
    CommandResult jobs = Flowsched(
        absl::StrCat("generate --what jobs --jobs 1 --tasks-per-job ",
                     kTasksPerJob, " --first-job-id ", job, " --first-task-id ",
                     (job - 1) * kTasksPerJob + 1, " --seed ", job));
    ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
    Submit(jobs.out);
  }

  // Produces one record to partition 0 with a third-party client.
  void Forge(const std::string& topic, const std::string& bytes, int n) {
    const std::string raw = absl::StrCat(dir_, "/forged-", n, ".bin");
    std::ofstream(raw, std::ios::binary) << bytes;
    CommandResult produced = Shell(absl::StrCat(
        KCAT_BINARY, " -P -b ", Bootstrap(), " -t ", topic, " -p 0 ", raw));
    ASSERT_EQ(produced.exit_code, 0) << produced.err;
  }
};

TEST_F(SolverFailoverTest, StandbyTakesOverAndOldInstancesAreFenced) {
  CommandResult machines = Flowsched(absl::StrCat(
      "generate --what machines --machines ", kMachines, " --slots ", kSlots));
  ASSERT_EQ(machines.exit_code, 0);
  Submit(machines.out);
  uint64_t jobs = 0;
  const auto all_placed = [&](const v1::GraphManagerStatus& s) {
    return s.tasks() == jobs * kTasksPerJob &&
           s.tasks_running() == jobs * kTasksPerJob && !s.round_in_flight();
  };

  SubmitJob(++jobs);
  v1::GraphManagerStatus status = WaitForStatus(
      [&](const auto& s) { return all_placed(s) && s.solver_epoch() != 0; }, 30,
      "the first job placed by the active worker");
  const uint64_t first_epoch = status.solver_epoch();
  const std::string first = ActiveWorker(first_epoch);
  ASSERT_FALSE(first.empty());
  const std::string second =
      first == "solver-worker" ? "solver-worker-2" : "solver-worker";
  const uint64_t second_epoch = WorkerEpoch(second);
  ASSERT_NE(second_epoch, 0u);
  ASSERT_NE(second_epoch, first_epoch);

  // 1. SIGKILL the active worker; work submitted right after must still
  //    get placed, by the standby.
  KillService(first);
  const auto killed_at = std::chrono::steady_clock::now();
  SubmitJob(++jobs);
  status = WaitForStatus(
      [&](const auto& s) {
        return all_placed(s) && s.solver_epoch() == second_epoch;
      },
      30, "the standby to take over and place the new job");
  const double takeover_s = std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - killed_at)
                                .count();
  std::printf(
      "solver takeover after SIGKILL: %.1f s (kill to new tasks "
      "placed)\n",
      takeover_s);
  RecordProperty("takeover_ms", static_cast<int>(takeover_s * 1000));
  EXPECT_LT(takeover_s, 15.0) << "takeover slower than issue #5 allows";

  // 2. Restart the killed worker: a new instance with a new epoch joins as
  //    standby; the running worker stays current.
  ASSERT_EQ(Flowsched("up").exit_code, 0);
  const uint64_t restarted_epoch = WaitForWorkerEpoch(first, first_epoch);
  ASSERT_NE(restarted_epoch, 0u);
  SubmitJob(++jobs);
  status = WaitForStatus(all_placed, 30, "a job after the restart");

  // 3. An answer forged with the killed instance's epoch, for the round
  //    the graph manager will cut next, preempting a running task: fenced.
  const uint64_t fenced_before = status.results_fenced();
  v1::PlacementRecord forged;
  v1::PlacementDecision* decision = forged.mutable_decision();
  decision->set_round_id(status.rounds_published() + 1);
  decision->set_epoch(first_epoch);
  decision->set_graph_epoch(status.epoch());
  decision->set_task_id(1);
  decision->set_job_id(1);
  decision->set_action(v1::ACTION_PREEMPT);
  Forge("flowsched.placements", forged.SerializeAsString(), 1);
  v1::PlacementRecord marker;
  marker.mutable_round_complete()->set_round_id(status.rounds_published() + 1);
  marker.mutable_round_complete()->set_epoch(first_epoch);
  marker.mutable_round_complete()->set_graph_epoch(status.epoch());
  marker.mutable_round_complete()->set_total_decisions(1);
  Forge("flowsched.placements", marker.SerializeAsString(), 2);
  status = WaitForStatus(
      [&](const auto& s) { return s.results_fenced() >= fenced_before + 2; },
      30, "the forged answer to be fenced");
  EXPECT_EQ(status.solver_epoch(), second_epoch);

  // 3b. A round addressed to another solver epoch, as a worker sees once
  //     another took over: the active worker stops solving; as it still
  //     holds the partition it claims the rounds back after a backoff.
  v1::SolverRound stray;
  stray.set_round_id(1'000'000);
  stray.set_epoch(status.epoch());
  stray.set_snapshot(true);
  stray.set_solver_epoch(1);
  Forge("flowsched.rounds", stray.SerializeAsString(), 3);
  const std::string second_log = dir_ + "/logs/" + second + ".log";
  for (int i = 0; i < 100; ++i) {
    if (ReadLog(second_log).find("is addressed to solver epoch 1,") !=
        std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(ReadLog(second_log).find("is addressed to solver epoch 1,"),
            std::string::npos)
      << "the worker solved or ignored a round addressed to another epoch";
  SubmitJob(++jobs);
  status = WaitForStatus(
      [&](const auto& s) {
        return all_placed(s) && s.solver_epoch() == second_epoch;
      },
      30, "the active worker to claim the rounds back");

  // 4. A zombie: pause the active worker until the restarted one took over,
  //    then let it run again. It must stand down, not publish.
  const std::string active = ActiveWorker(status.solver_epoch());
  ASSERT_FALSE(active.empty());
  const std::string standby =
      active == "solver-worker" ? "solver-worker-2" : "solver-worker";
  const uint64_t standby_epoch = WorkerEpoch(standby);
  const int paused = ServicePid(active);
  ASSERT_EQ(::kill(paused, SIGSTOP), 0);
  SubmitJob(++jobs);
  status = WaitForStatus(
      [&](const auto& s) {
        return all_placed(s) && s.solver_epoch() == standby_epoch;
      },
      30, "the standby to take over from the paused worker");
  ASSERT_EQ(::kill(paused, SIGCONT), 0);
  for (int i = 0; i < 100; ++i) {  // it learns it lost the partition
    if (ReadLog(dir_ + "/logs/" + active + ".log")
            .find("lost the rounds partition") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(ReadLog(dir_ + "/logs/" + active + ".log")
                .find("lost the rounds partition"),
            std::string::npos)
      << "the resumed worker never stood down";
  SubmitJob(++jobs);
  status = WaitForStatus(all_placed, 30, "every job placed at the end");
  EXPECT_EQ(status.solver_epoch(), standby_epoch)
      << "the resumed old worker became current again";
  EXPECT_EQ(status.events_rejected(), 0u);

  // Exactly once: every task placed once, no machine over its slots.
  ExpectAllPlacedWithinSlots(jobs * kTasksPerJob, kSlots);
}

}  // namespace
}  // namespace flowsched::testing
