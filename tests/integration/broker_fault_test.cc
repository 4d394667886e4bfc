// Broker faults during a run, injected through the embedded broker's
// control file: all brokers down and up again, and request errors. The
// services retry with backoff, nothing crashes and nothing is lost.

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/integration/pipeline_fixture.h"

namespace flowsched::testing {
namespace {

class BrokerFaultTest : public PipelineTest {
 protected:
  void Control(const std::string& lines) {
    const std::string path = dir_ + "/bootstrap.control";
    // Wait until the broker consumed the previous file.
    for (int i = 0; i < 100 && std::ifstream(path).good(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::ofstream(path + ".tmp") << lines;
    std::rename((path + ".tmp").c_str(), path.c_str());
  }
};

TEST_F(BrokerFaultTest, ServicesRideOutBrokerOutagesAndRequestErrors) {
  CommandResult machines =
      Flowsched("generate --what machines --machines 30 --slots 4");
  ASSERT_EQ(machines.exit_code, 0);
  Submit(machines.out);
  int faults = 0;
  uint64_t submitted = 0;
  for (int wave = 0; wave < 4; ++wave) {
    CommandResult jobs = Flowsched(absl::StrCat(
        "generate --what jobs --jobs 3 --tasks-per-job 8 --first-job-id ",
        1 + 3 * wave, " --first-task-id ", 1 + 24 * wave));
    ASSERT_EQ(jobs.exit_code, 0);
    Submit(jobs.out);
    submitted += 24;
    if (wave % 2 == 0) {
      Control("down -1\n");  // every broker
      ++faults;
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      Control("up -1\n");
    } else {
      // Produce (0) and Fetch (1) requests fail with retriable errors:
      // 6 NOT_LEADER_FOR_PARTITION, 7 REQUEST_TIMED_OUT.
      Control("errors 0 6 5\nerrors 1 7 5\nerrors 0 7 3\n");
      faults += 3;
    }
  }
  WaitForStatus(
      [&](const auto& s) {
        return s.tasks_submitted() == submitted &&
               s.tasks_running() == submitted && !s.round_in_flight();
      },
      90, "every task placed after the faults");
  EXPECT_EQ(faults, 8);
  for (const char* name : {"graph-manager", "solver-worker", "broker"}) {
    EXPECT_EQ(::kill(ServicePid(name), 0), 0) << name << " died";
  }
  EXPECT_EQ(TaskPlacements().size(), submitted);
}

}  // namespace
}  // namespace flowsched::testing
