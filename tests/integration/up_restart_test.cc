// `flowsched up` after a crash (issue #34): the data directory remembers
// how its services run, so `up` with no flags restarts a SIGKILLed graph
// manager in the same cut mode and log format, even while the dead
// process is still an unreaped zombie; contradicting flags are refused;
// `up` says "up" only when every service runs and is ready.

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/pipeline_fixture.h"

namespace flowsched::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// argv of a process, joined by spaces.
std::string CommandLine(int pid) {
  std::string line = ReadAll("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& c : line) {
    if (c == '\0') c = ' ';
  }
  return line;
}

class UpRestartTest : public PipelineTest {
 protected:
  UpRestartTest() { up_flags_ = "--cut-every-events 50 --log-format json"; }
};

TEST_F(UpRestartTest, UpWithoutFlagsRestartsTheKilledManagerTheSameWay) {
  const std::string stored = ReadAll(dir_ + "/deployment");
  EXPECT_THAT(stored, HasSubstr("\ncut-every-events 50\n"));
  EXPECT_THAT(stored, HasSubstr("\nlog-format json\n"));
  Submit(R"({"machine_added":{"machine_id":"1","task_slots":4}})"
         "\n");
  for (int round = 0; round < 3; ++round) {
    const int old_pid = ServicePid("graph-manager");
    KillService("graph-manager");
    // At once, while the killed process may still be a zombie.
    CommandResult up = Flowsched("up");
    ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
    EXPECT_THAT(up.out, HasSubstr("flowsched is up"));
    const int pid = ServicePid("graph-manager");
    ASSERT_NE(pid, old_pid);
    const std::string argv = CommandLine(pid);
    EXPECT_THAT(argv, HasSubstr(" graph-manager "));
    EXPECT_THAT(argv, HasSubstr(" --cut-every-events 50"));
    EXPECT_THAT(argv, HasSubstr(" --log-format json"));
  }
  KillService("solver-worker");
  CommandResult up = Flowsched("up");
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  EXPECT_THAT(CommandLine(ServicePid("solver-worker")),
              HasSubstr(" --log-format json"));
  CommandResult status = Flowsched("status");
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(
      status.out,
      HasSubstr("graph-manager     running (pid " +
                std::to_string(ServicePid("graph-manager")) + "), ready"));
  // JSON log lines: one object per line, this service's name in each.
  std::istringstream log(ReadAll(dir_ + "/logs/graph-manager.log"));
  std::string line;
  int json_lines = 0;
  while (std::getline(log, line)) {
    ASSERT_EQ(line.front(), '{') << line;
    ASSERT_EQ(line.back(), '}') << line;
    EXPECT_THAT(line, HasSubstr("\"level\":\""));
    EXPECT_THAT(line, HasSubstr("\"service\":\"graph-manager\""));
    ++json_lines;
  }
  EXPECT_GT(json_lines, 0);
}

TEST_F(UpRestartTest, ContradictingFlagsAreRefusedWithTheWayOut) {
  CommandResult clock = Flowsched("up --cut-every-events 0");
  EXPECT_EQ(clock.exit_code, 1);
  EXPECT_THAT(clock.err,
              HasSubstr("--cut-every-events: stored 50, requested 0 (rounds "
                        "follow the clock)"));
  EXPECT_THAT(clock.err, HasSubstr("--reset-deployment"));
  CommandResult policy = Flowsched("up --policy cpu-memory");
  EXPECT_EQ(policy.exit_code, 1);
  EXPECT_THAT(policy.err, HasSubstr("flowsched policy set cpu-memory"));
  // Equal values and the log format are no contradiction.
  CommandResult same = Flowsched("up --cut-every-events 50 --log-format text");
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_THAT(ReadAll(dir_ + "/deployment"), HasSubstr("\nlog-format text\n"));

  CommandResult early = Flowsched("up --reset-deployment --cut-every-events 9");
  EXPECT_EQ(early.exit_code, 1);
  EXPECT_THAT(early.err, HasSubstr("stop everything first"));
  ASSERT_EQ(Flowsched("down").exit_code, 0);
  CommandResult reset = Flowsched("up --reset-deployment --cut-every-events 9");
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_THAT(ReadAll(dir_ + "/deployment"),
              HasSubstr("\ncut-every-events 9\n"));
  EXPECT_THAT(CommandLine(ServicePid("graph-manager")),
              HasSubstr(" --cut-every-events 9"));
}

TEST_F(UpRestartTest, GarbledDeploymentFileIsAClearError) {
  ASSERT_EQ(Flowsched("down").exit_code, 0);
  std::ofstream(dir_ + "/deployment", std::ios::trunc) << "version 9\n\x01\n";
  CommandResult up = Flowsched("up");
  EXPECT_EQ(up.exit_code, 1);
  EXPECT_THAT(up.err, HasSubstr("/deployment is not a valid deployment file "
                                "(line 1: version 9 is not supported"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/pids/graph-manager.pid"));
}

TEST_F(UpRestartTest, PidFileOfAnotherProcessIsNotARunningService) {
  ASSERT_EQ(Flowsched("down").exit_code, 0);
  ASSERT_EQ(Flowsched("up").exit_code, 0);
  StopService("graph-manager");
  // An old-style pid file naming a live process that is not flowsched.
  std::ofstream(dir_ + "/pids/graph-manager.pid", std::ios::trunc)
      << ::getpid() << "\n";
  CommandResult status = Flowsched("status");
  EXPECT_THAT(status.out, HasSubstr("graph-manager     not running (pid " +
                                    std::to_string(::getpid()) +
                                    " pid reused by another process)"));
  CommandResult up = Flowsched("up");
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_NE(ServicePid("graph-manager"), ::getpid());
  EXPECT_THAT(CommandLine(ServicePid("graph-manager")),
              HasSubstr(" graph-manager "));
}

TEST_F(UpRestartTest, ServiceThatCannotStartMakesUpFail) {
  ASSERT_EQ(Flowsched("down").exit_code, 0);
  // A store the graph manager cannot open: a file where its directory goes.
  std::filesystem::remove_all(dir_ + "/state");
  std::ofstream(dir_ + "/state") << "not a RocksDB directory\n";
  CommandResult up = Flowsched("up");
  EXPECT_NE(up.exit_code, 0);
  EXPECT_THAT(up.out, Not(HasSubstr("flowsched is up")));
  EXPECT_THAT(up.err, HasSubstr("graph manager did not start"));
}

TEST_F(UpRestartTest, BadPolicySpecIsRefusedBeforeAnythingStarts) {
  ASSERT_EQ(Flowsched("down").exit_code, 0);
  CommandResult up =
      Flowsched("up --reset-deployment --policy quincy-qfp:omega=-1");
  EXPECT_NE(up.exit_code, 0);
  EXPECT_THAT(up.err, HasSubstr("omega must be in [0, 1000], got -1"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/pids/graph-manager.pid"));
}

}  // namespace
}  // namespace flowsched::testing
