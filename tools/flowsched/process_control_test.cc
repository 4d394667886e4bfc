#include "tools/flowsched/process_control.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"

namespace flowsched::tools {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

class PidFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            absl::StrCat("flowsched-pid-test-", ::getpid()))
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

uint64_t OwnStartTime() {
  auto stat = ReadProcessStat(::getpid());
  EXPECT_THAT(stat, IsOk());
  return stat.ok() ? stat->start_time : 0;
}

TEST(ProcessStatTest, ParsesStateAndStartTimeAfterAnOddCommandName) {
  // Field 22 is the start time; the command name holds ") (" and spaces.
  const std::string text =
      "4242 (we ird) (name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 "
      "0 1 0 987654 1000 10 18446744073709551615\n";
  auto stat = ParseProcessStat(text);
  ASSERT_THAT(stat, IsOk());
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->start_time, 987654u);
  EXPECT_THAT(ParseProcessStat("4242 (x) Z 1 2"),
              StatusIs(absl::StatusCode::kInvalidArgument, "too few fields"));
  EXPECT_THAT(ParseProcessStat("garbage"),
              StatusIs(absl::StatusCode::kInvalidArgument, "(comm)"));
}

TEST_F(PidFileTest, RecordsPidAndStartTime) {
  const std::string path = dir_ + "/self.pid";
  ASSERT_THAT(WritePidFile(path, ::getpid()), IsOk());
  auto record = ReadPidRecord(path);
  ASSERT_THAT(record, IsOk());
  EXPECT_EQ(record->pid, ::getpid());
  ASSERT_TRUE(record->start_time.has_value());
  EXPECT_EQ(*record->start_time, OwnStartTime());
  EXPECT_EQ(CheckProcess(*record, {}), ProcessCheck::kRunning);
  auto pid = ReadPidFile(path);
  ASSERT_THAT(pid, IsOk());
  EXPECT_EQ(*pid, ::getpid());
}

TEST_F(PidFileTest, ReadsOldPidOnlyFilesAndRefusesGarbage) {
  const auto write = [&](const std::string& text) {
    std::ofstream(dir_ + "/x.pid", std::ios::trunc) << text;
    return ReadPidRecord(dir_ + "/x.pid");
  };
  auto old = write("1234\n");
  ASSERT_THAT(old, IsOk());
  EXPECT_EQ(old->pid, 1234);
  EXPECT_FALSE(old->start_time.has_value());
  for (const char* bad : {"", "abc\n", "1\n", "-5\n", "12 x\n", "1 2 3\n"}) {
    EXPECT_THAT(write(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, "holds"))
        << bad;
  }
  EXPECT_THAT(ReadPidRecord(dir_ + "/missing.pid"),
              StatusIs(absl::StatusCode::kNotFound, "no pid file"));
}

TEST(CheckProcessTest, ReusedPidIsAnotherProcess) {
  // A pid file naming a live process with another start time.
  PidRecord record{.pid = ::getpid(), .start_time = OwnStartTime() + 1};
  EXPECT_EQ(CheckProcess(record, {.subcommand = "graph-manager"}),
            ProcessCheck::kOtherProcess);
}

TEST(CheckProcessTest, OldPidFileOfAProcessThatIsNotFlowschedIsNotRunning) {
  // This test binary is not `flowsched graph-manager`.
  PidRecord record{.pid = ::getpid()};
  EXPECT_EQ(CheckProcess(record, {.subcommand = "graph-manager"}),
            ProcessCheck::kOtherProcess);
}

TEST(CheckProcessTest, OldPidFileMatchesByCommandLine) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  PidRecord record{.pid = child};
  const ProcessIdentity sleep{.program = "sleep", .subcommand = "30"};
  // Until exec, the child's command line is this test's.
  ProcessCheck check = ProcessCheck::kGone;
  for (int i = 0; i < 200; ++i) {
    check = CheckProcess(record, sleep);
    if (check == ProcessCheck::kRunning) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(check, ProcessCheck::kRunning);
  EXPECT_EQ(CheckProcess(record, {.subcommand = "30"}),
            ProcessCheck::kOtherProcess);  // not named flowsched
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(CheckProcess(record, sleep), ProcessCheck::kGone);
  EXPECT_FALSE(ProcessAlive(child));
}

// Forks a parent that forks a child which exits at once; the parent never
// reaps it, so the child stays a zombie this process cannot reap. Returns
// {parent, zombie}.
std::pair<pid_t, pid_t> MakeOrphanedZombie() {
  int fds[2];
  if (::pipe(fds) != 0) return {-1, -1};
  const pid_t parent = ::fork();
  if (parent == 0) {
    ::close(fds[0]);
    const pid_t zombie = ::fork();
    if (zombie == 0) ::_exit(0);
    [[maybe_unused]] ssize_t n = ::write(fds[1], &zombie, sizeof(zombie));
    ::pause();  // until SIGKILLed, without reaping
    ::_exit(0);
  }
  ::close(fds[1]);
  pid_t zombie = -1;
  if (::read(fds[0], &zombie, sizeof(zombie)) != sizeof(zombie)) zombie = -1;
  ::close(fds[0]);
  return {parent, zombie};
}

TEST(CheckProcessTest, ZombieIsNotRunning) {
  auto [parent, zombie] = MakeOrphanedZombie();
  ASSERT_GT(parent, 0);
  ASSERT_GT(zombie, 0);
  char state = '?';
  for (int i = 0; i < 200 && state != 'Z'; ++i) {
    auto stat = ReadProcessStat(zombie);
    if (stat.ok()) state = stat->state;
    if (state != 'Z')
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(state, 'Z');
  // kill(pid, 0) succeeds on a zombie; the check must not.
  EXPECT_EQ(::kill(zombie, 0), 0);
  EXPECT_EQ(CheckProcess({.pid = zombie}, {.subcommand = "graph-manager"}),
            ProcessCheck::kZombie);
  auto stat = ReadProcessStat(zombie);
  ASSERT_THAT(stat, IsOk());
  EXPECT_EQ(CheckProcess({.pid = zombie, .start_time = stat->start_time}, {}),
            ProcessCheck::kZombie);
  EXPECT_FALSE(ProcessAlive(zombie));
  EXPECT_THAT(StopProcess(zombie, 100), IsOk());
  ::kill(parent, SIGKILL);
  ::waitpid(parent, nullptr, 0);
}

TEST(CheckProcessTest, OwnExitedChildIsNotRunning) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Either still a zombie or reaped by the check: never running.
  EXPECT_NE(CheckProcess({.pid = child}, {.program = "cli_test"}),
            ProcessCheck::kRunning);
  EXPECT_FALSE(ProcessAlive(child));
}

TEST_F(PidFileTest, WriteFileAtomicallyReplacesTheWholeFile) {
  const std::string path = dir_ + "/f";
  ASSERT_THAT(WriteFileAtomically(path, "a long first content\n"), IsOk());
  ASSERT_THAT(WriteFileAtomically(path, "short\n"), IsOk());
  std::ifstream in(path);
  std::string all((std::istreambuf_iterator<char>(in)),
                  std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "short\n");
  EXPECT_THAT(WriteFileAtomically(dir_ + "/no/such/dir/f", "x"),
              StatusIs(absl::StatusCode::kUnavailable, "cannot write"));
}

}  // namespace
}  // namespace flowsched::tools
