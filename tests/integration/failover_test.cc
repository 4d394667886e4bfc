// Graph manager failover (issue #5, item 7), through the real processes:
// two graph managers with their own data directories run with --ha on one
// broker; the one holding the leader lease is active. SIGKILL the active
// one: the standby must take over (rebuilding its state from the ledger to
// the digest the dead one left), and new work gets placed. The killed one,
// restarted, must stay standby while the new one keeps its epoch. A paused
// ex-leader (SIGSTOP, then SIGCONT after the takeover) must step down
// without its results being applied.

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "services/graph_manager/status_report.h"
#include "tests/integration/pipeline_fixture.h"

namespace flowsched::testing {
namespace {

constexpr uint64_t kFailoverMachines = 24, kFailoverSlots = 4,
                   kFailoverTasksPerJob = 8;

class FailoverTest : public PipelineTest {
 protected:
  FailoverTest() { up_flags_ = "--ha"; }

  void TearDown() override {
    if (second_pid_ > 1) {
      ::kill(second_pid_, SIGCONT);
      ::kill(second_pid_, SIGTERM);
      for (int i = 0; i < 1000 && ::kill(second_pid_, 0) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    if (HasFailure()) {
      std::cerr
          << "---- second graph manager log ----\n"
          << Shell("tail -c 6000 " + second_dir() + "/graph-manager.log").out
          << "\n";
    }
    PipelineTest::TearDown();
  }

  [[nodiscard]] std::string second_dir() const { return dir_ + "/gm2"; }

  void StartSecond() {
    std::filesystem::create_directories(second_dir());
    CommandResult started = Shell(absl::StrCat(
        FLOWSCHED_BINARY,
        " graph-manager --ha --lease-session-timeout-ms 3000 --data-dir ",
        second_dir(), " --brokers ", Bootstrap(), " > ", second_dir(),
        "/graph-manager.log 2>&1 & echo $!"));
    ASSERT_EQ(started.exit_code, 0);
    ASSERT_TRUE(
        absl::SimpleAtoi(absl::StripAsciiWhitespace(started.out), &second_pid_))
        << started.out;
  }

  uint64_t SubmitJobs(uint64_t jobs) {
    CommandResult generated = Flowsched(absl::StrCat(
        "generate --what jobs --jobs ", jobs, " --tasks-per-job ",
        kFailoverTasksPerJob, " --first-job-id ", next_job_,
        " --first-task-id ", (next_job_ - 1) * kFailoverTasksPerJob + 1,
        " --seed ", next_job_));
    EXPECT_EQ(generated.exit_code, 0) << generated.err;
    next_job_ += jobs;
    Submit(generated.out);
    return jobs * kFailoverTasksPerJob;
  }

  static std::function<bool(const v1::GraphManagerStatus&)> AllPlaced(
      uint64_t tasks) {
    return [tasks](const v1::GraphManagerStatus& s) {
      return s.role() == "active" && s.tasks_submitted() == tasks &&
             s.tasks_running() == tasks && !s.round_in_flight();
    };
  }

  int second_pid_ = 0;
  uint64_t next_job_ = 1;
};

TEST_F(FailoverTest, StandbyTakesOverAndTheOldInstanceIsFenced) {
  WaitForStatusIn(
      dir_, [](const auto& s) { return s.role() == "active"; }, 30,
      "the first graph manager active");
  StartSecond();
  if (HasFatalFailure()) return;
  WaitForStatusIn(
      second_dir(), [](const auto& s) { return s.role() == "standby"; }, 30,
      "the second graph manager standby");

  CommandResult machines =
      Flowsched(absl::StrCat("generate --what machines --machines ",
                             kFailoverMachines, " --slots ", kFailoverSlots));
  ASSERT_EQ(machines.exit_code, 0);
  Submit(machines.out);
  uint64_t submitted = SubmitJobs(4);
  const v1::GraphManagerStatus first = WaitForStatusIn(
      dir_, AllPlaced(submitted), 60, "the first workload placed");
  const int first_pid = ServicePid("graph-manager");

  // SIGKILL the active one; new work arrives at once.
  KillService("graph-manager");
  const auto killed_at = std::chrono::steady_clock::now();
  CommandResult offline = Flowsched("inspect digest");
  ASSERT_EQ(offline.exit_code, 0) << offline.err;
  const std::string digest(absl::StripAsciiWhitespace(offline.out));
  submitted += SubmitJobs(2);
  // Liveness bound only; the measured time is printed.
  const v1::GraphManagerStatus taken = WaitForStatusIn(
      second_dir(), [](const auto& s) { return s.role() == "active"; }, 30,
      "the standby taking over");
  const double takeover_s = std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - killed_at)
                                .count();
  const v1::GraphManagerStatus placed = WaitForStatusIn(
      second_dir(), AllPlaced(submitted), 30, "new work placed after takeover");
  const double placed_s = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - killed_at)
                              .count();
  std::cout << "takeover after SIGKILL: standby active after " << takeover_s
            << " s, new tasks placed after " << placed_s << " s\n";
  RecordProperty("takeover_ms", static_cast<int>(takeover_s * 1000));
  EXPECT_GT(taken.epoch(), first.epoch());
  EXPECT_EQ(taken.digest_at_start(), digest)
      << "the standby did not rebuild the state the active one left";

  // The killed instance comes back: it stays standby, the new one stays
  // active with its epoch.
  CommandResult up = Flowsched("up --ha");
  ASSERT_EQ(up.exit_code, 0) << up.err;
  ASSERT_NE(ServicePid("graph-manager"), first_pid);
  WaitForStatusIn(
      dir_, [](const auto& s) { return s.role() == "standby"; }, 30,
      "the restarted graph manager standby");
  submitted += SubmitJobs(2);
  const v1::GraphManagerStatus after = WaitForStatusIn(
      second_dir(), AllPlaced(submitted), 30, "work placed with two up");
  EXPECT_EQ(after.epoch(), taken.epoch()) << "the active one was displaced";
  EXPECT_EQ(after.pid(), placed.pid());
  auto restarted = graph_manager::ReadStatusFile(dir_ + "/status.json");
  ASSERT_TRUE(restarted.ok());
  EXPECT_EQ(restarted->role(), "standby");

  // A paused leader (SIGSTOP) loses the lease; after SIGCONT it must step
  // down, and whatever it still publishes is ignored.
  ASSERT_EQ(::kill(second_pid_, SIGSTOP), 0);
  const auto paused_at = std::chrono::steady_clock::now();
  const v1::GraphManagerStatus third = WaitForStatusIn(
      dir_, [](const auto& s) { return s.role() == "active"; }, 30,
      "the restarted instance taking over from the paused one");
  std::cout << "takeover from a paused leader after "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                             paused_at)
                   .count()
            << " s\n";
  EXPECT_GT(third.epoch(), after.epoch());
  submitted += SubmitJobs(1);
  ASSERT_EQ(::kill(second_pid_, SIGCONT), 0);
  WaitForStatusIn(
      second_dir(), [](const auto& s) { return s.role() == "standby"; }, 30,
      "the resumed ex-leader stepping down");
  const v1::GraphManagerStatus last = WaitForStatusIn(
      dir_, AllPlaced(submitted), 30, "work placed after the pause");
  EXPECT_EQ(last.epoch(), third.epoch());
  const std::string second_log =
      Shell("cat " + second_dir() + "/graph-manager.log").out;
  EXPECT_NE(second_log.find("stepping down to standby"), std::string::npos)
      << "the resumed ex-leader did not step down";
  std::map<uint64_t, uint64_t> per_machine;
  CommandResult tasks = Flowsched("inspect tasks");
  ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
  std::istringstream lines(tasks.out);
  std::string header;
  std::getline(lines, header);
  uint64_t task = 0, job = 0, machine = 0, count = 0;
  while (lines >> task >> job >> machine) {
    ++count;
    EXPECT_NE(machine, 0u) << "task " << task << " waits";
    ++per_machine[machine];
  }
  EXPECT_EQ(count, submitted);
  for (const auto& [m, n] : per_machine) {
    EXPECT_LE(n, kFailoverSlots) << "machine " << m << " over capacity";
  }
}

}  // namespace
}  // namespace flowsched::testing
