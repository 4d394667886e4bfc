#include "tests/integration/pipeline_fixture.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "services/graph_manager/status_report.h"

namespace flowsched::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// True while `pid` exists and has not exited: a zombie (state Z, which
// kill(pid, 0) still accepts) is gone. The services are orphans once
// `flowsched up` exits, and an init that does not reap leaves their
// zombies behind.
bool Alive(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!in || !std::getline(in, stat)) return false;
  const size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ||
         (stat[close + 2] != 'Z' && stat[close + 2] != 'X');
}

}  // namespace

void PipelineTest::SetUp() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  // A parameterised test's name has a '/', which would nest the directory
  // in one TearDown does not remove.
  std::string name = info->name();
  std::replace(name.begin(), name.end(), '/', '_');
  dir_ = (std::filesystem::temp_directory_path() /
          ("flowsched-it-" + name + "-" + std::to_string(::getpid())))
             .string();
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_ + "/cmd");
  if (OnKafka09()) StartKafka09();
  if (HasFatalFailure()) return;
  CommandResult up = Flowsched("up " + up_flags_);
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
}

void PipelineTest::TearDown() {
  CommandResult down = Flowsched("down");
  EXPECT_EQ(down.exit_code, 0) << down.out << down.err;
  if (OnKafka09()) StopKafka09();
  if (HasFailure()) {
    for (const char* name :
         {"broker", "graph-manager", "solver-worker", "solver-worker-2"}) {
      std::string log = ReadFile(dir_ + "/logs/" + name + ".log");
      if (log.empty()) continue;
      if (log.size() > 6000) log = log.substr(log.size() - 6000);
      std::cerr << "---- " << name << ".log (tail) ----\n" << log << "\n";
    }
  } else {
    std::filesystem::remove_all(dir_);
  }
}

CommandResult PipelineTest::Shell(const std::string& command_line,
                                  const std::string& input) {
  const std::string base = dir_ + "/cmd/" + std::to_string(++command_counter_);
  {
    std::ofstream in(base + ".in");
    in << input;
  }
  const std::string line = command_line + " < " + base + ".in > " + base +
                           ".out 2> " + base + ".err";
  const int raw = std::system(line.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  result.out = ReadFile(base + ".out");
  result.err = ReadFile(base + ".err");
  return result;
}

CommandResult PipelineTest::Flowsched(const std::string& args,
                                      const std::string& input) {
  return Shell(std::string(FLOWSCHED_BINARY) + " " + args + " --data-dir " +
                   dir_ + " " + broker_flags_,
               input);
}

void PipelineTest::Submit(const std::string& json_lines) {
  CommandResult result = Flowsched("submit -", json_lines);
  ASSERT_EQ(result.exit_code, 0) << result.err;
}

v1::GraphManagerStatus PipelineTest::WaitForStatus(
    const std::function<bool(const v1::GraphManagerStatus&)>& done,
    int timeout_s, const std::string& what) {
  return WaitForStatusIn(dir_, done, timeout_s, what);
}

v1::GraphManagerStatus PipelineTest::WaitForStatusIn(
    const std::string& dir,
    const std::function<bool(const v1::GraphManagerStatus&)>& done,
    int timeout_s, const std::string& what) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  v1::GraphManagerStatus last;
  while (std::chrono::steady_clock::now() < deadline) {
    auto status = graph_manager::ReadStatusFile(dir + "/status.json");
    if (status.ok()) {
      last = *status;
      if (done(last)) return last;
    }
    // Fine enough to time a takeover (failover tests print it).
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << "timed out after " << timeout_s << " s waiting for " << what
                << "; last status: " << last.ShortDebugString();
  return last;
}

void PipelineTest::ExpectAllPlacedWithinSlots(uint64_t tasks, uint64_t slots) {
  const std::map<uint64_t, uint64_t> placed = TaskPlacements();
  EXPECT_EQ(placed.size(), tasks);
  std::map<uint64_t, uint64_t> per_machine;
  for (const auto& [task, machine] : placed) {
    EXPECT_NE(machine, 0u) << "task " << task << " waits";
    ++per_machine[machine];
  }
  for (const auto& [machine, count] : per_machine) {
    EXPECT_LE(count, slots) << "machine " << machine << " over capacity";
  }
}

std::map<uint64_t, uint64_t> PipelineTest::TaskPlacements() {
  CommandResult result = Flowsched("inspect tasks");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::map<uint64_t, uint64_t> placements;
  std::istringstream lines(result.out);
  std::string header;
  std::getline(lines, header);
  uint64_t task = 0, job = 0, machine = 0;
  while (lines >> task >> job >> machine) placements[task] = machine;
  return placements;
}

int PipelineTest::ServicePid(const std::string& name) const {
  std::ifstream in(dir_ + "/pids/" + name + ".pid");
  int pid = 0;
  in >> pid;
  return pid;
}

void PipelineTest::KillService(const std::string& name) {
  const int pid = ServicePid(name);
  ASSERT_GT(pid, 1) << name << " has no pid file";
  ASSERT_EQ(::kill(pid, SIGKILL), 0) << name;
  for (int i = 0; i < 500 && Alive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(Alive(pid)) << name << " survived SIGKILL";
}

uint64_t PipelineTest::WorkerEpoch(const std::string& name) const {
  static const std::regex kEpoch("solver worker epoch ([0-9]+) using");
  const std::string log = ReadFile(dir_ + "/logs/" + name + ".log");
  uint64_t epoch = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), kEpoch);
       it != std::sregex_iterator(); ++it) {
    epoch = std::stoull((*it)[1].str());
  }
  return epoch;
}

std::string PipelineTest::SolverWorkerWithEpoch(uint64_t solver_epoch) const {
  for (const char* name : {"solver-worker", "solver-worker-2"}) {
    if (solver_epoch != 0 && WorkerEpoch(name) == solver_epoch) return name;
  }
  return "";
}

void PipelineTest::StopService(const std::string& name) {
  const int pid = ServicePid(name);
  ASSERT_GT(pid, 1) << name << " has no pid file";
  ASSERT_EQ(::kill(pid, SIGTERM), 0) << name;
  for (int i = 0; i < 3000 && Alive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(Alive(pid)) << name << " did not stop on SIGTERM";
}

bool PipelineTest::OnKafka09() {
#ifdef FLOWSCHED_TEST_ON_KAFKA09
  return true;
#else
  return false;
#endif
}

void PipelineTest::StartKafka09() {
  kafka09_dir_ = dir_ + "/kafka09";
  CommandResult started =
      Shell(absl::StrCat(KAFKA09_SCRIPT, " start ", kafka09_dir_));
  ASSERT_EQ(started.exit_code, 0) << started.out << started.err;
  kafka09_bootstrap_ = std::string(absl::StripAsciiWhitespace(started.out));
  ASSERT_FALSE(kafka09_bootstrap_.empty());
  broker_flags_ =
      absl::StrCat("--brokers ", kafka09_bootstrap_, " --legacy-broker");
}

void PipelineTest::RestartKafka09() {
  ASSERT_TRUE(OnKafka09());
  CommandResult restarted =
      Shell(absl::StrCat(KAFKA09_SCRIPT, " restart ", kafka09_dir_));
  ASSERT_EQ(restarted.exit_code, 0) << restarted.err;
}

void PipelineTest::StopKafka09() {
  if (kafka09_dir_.empty()) return;
  CommandResult stopped =
      Shell(absl::StrCat(KAFKA09_SCRIPT, " stop ", kafka09_dir_));
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
}

std::string PipelineTest::Bootstrap() const {
  if (OnKafka09()) return kafka09_bootstrap_;
  std::string line;
  std::ifstream in(dir_ + "/bootstrap");
  std::getline(in, line);
  return line;
}

}  // namespace flowsched::testing
