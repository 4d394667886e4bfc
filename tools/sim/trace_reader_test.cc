#include "tools/sim/trace_reader.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace flowsched::sim {
namespace {

using ::testing::HasSubstr;

constexpr char kTinyTraceDir[] =
    FLOWSCHED_SOURCE_DIR "/tests/data/google_trace_tiny";

TEST(TraceReaderTest, ReadsTheTinyTrace) {
  TraceReader reader(TraceOptions{.machines_per_rack = 4});
  ASSERT_TRUE(reader
                  .ReadFiles(std::string(kTinyTraceDir) + "/machine_events.csv",
                             std::string(kTinyTraceDir) + "/task_events.csv")
                  .ok());
  const Workload w = reader.Build();
  EXPECT_EQ(reader.stats().skipped, 0u);
  EXPECT_EQ(reader.stats().tasks_never_ran, 1u);
  EXPECT_EQ(reader.stats().events_after_end, 1u);
  ASSERT_EQ(w.machines.size(), 6u);
  EXPECT_EQ(w.machines[0].id, 5u);
  EXPECT_EQ(w.machines[0].rack, "rack-0");
  EXPECT_EQ(w.machines[4].rack, "rack-1");
  EXPECT_EQ(w.machines[2].remove_us, 835'150'655);  // machine 7
  EXPECT_EQ(w.machines[5].cpu, 0.0);                // empty field
  ASSERT_EQ(w.tasks.size(), 10u);
  for (size_t i = 1; i < w.tasks.size(); ++i) {
    EXPECT_LE(w.tasks[i - 1].submit_us, w.tasks[i].submit_us);
  }
  // Running before the trace: arrive at 0, never end.
  EXPECT_EQ(w.tasks[0].submit_us, 0);
  EXPECT_EQ(w.tasks[0].duration_us, kForever);
  EXPECT_DOUBLE_EQ(w.tasks[0].cpu, 0.125);
  int evicted = 0, forever = 0;
  for (const SimTask& t : w.tasks) {
    if (t.job_id == 6251812952u && t.duration_us == 62'000'000) ++evicted;
    if (t.job_id == 7000000002u) {
      EXPECT_EQ(t.duration_us, kForever);  // its end is after the trace
      ++forever;
    }
    if (t.job_id == 515042969u && t.submit_us == 600'026'366) {
      EXPECT_GT(t.duration_us, 0);
    }
  }
  EXPECT_EQ(evicted, 1);  // first attempt: SCHEDULE -> EVICT
  EXPECT_EQ(forever, 1);
}

TEST(TraceReaderTest, BadLinesAreSkippedWithFileAndLine) {
  std::istringstream machines(
      "0,1,0,p,0.5,0.5\n"
      "x,2,0,p,0.5,0.5\n"      // bad time
      "0,3,9,p,0.5,0.5\n"      // bad type
      "0,4,0,p,1.5,0.5\n"      // size out of range
      "0,5,0,p,0.5\n"          // too few fields
      "0,6,0,p,0.5,0.5\r\n");  // CRLF is fine
  TraceReader reader(TraceOptions{});
  ASSERT_TRUE(reader.ReadMachineEvents(machines, "m.csv").ok());
  EXPECT_EQ(reader.stats().skipped, 4u);
  ASSERT_EQ(reader.stats().errors.size(), 4u);
  EXPECT_THAT(reader.stats().errors[0], HasSubstr("m.csv:2: bad timestamp"));
  EXPECT_THAT(reader.stats().errors[1], HasSubstr("m.csv:3: bad event type"));
  EXPECT_THAT(reader.stats().errors[2], HasSubstr("m.csv:4: bad CPUs"));
  EXPECT_THAT(reader.stats().errors[3], HasSubstr("m.csv:5: expected 6"));
  std::istringstream tasks(
      "1,,10,0,,0,u,0,0,0.1,0.1,0,0\n"
      "2,,10,0,,1,u,0,0,0.1,0.1,0,0\n"
      "3,,10,-1,,1,u,0,0,0.1,0.1,0,0\n"  // negative index
      "3,,10,1,,1,u,0,12,0.1,0.1,0,0\n"  // priority out of range
      "3,,10,1,,1,u,0,0,0.1,0.1,0,2\n"   // bad different-machine flag
      "3,,,1,,1,u,0,0,0.1,0.1,0,0\n"     // missing job ID
      "9,,10,0,,4,u,0,0,0.1,0.1,0,0\n");
  ASSERT_TRUE(reader.ReadTaskEvents(tasks, "t.csv").ok());
  EXPECT_EQ(reader.stats().skipped, 8u);
  EXPECT_THAT(reader.stats().errors.back(), HasSubstr("t.csv:6: bad job ID"));
  const Workload w = reader.Build();
  EXPECT_EQ(w.machines.size(), 2u);
  ASSERT_EQ(w.tasks.size(), 1u);
  EXPECT_EQ(w.tasks[0].submit_us, 1);
  EXPECT_EQ(w.tasks[0].duration_us, 7);
}

TEST(TraceReaderTest, FailPolicyStopsAtTheFirstBadLine) {
  std::istringstream tasks(
      "1,,10,0,,0,u,0,0,0.1,0.1,0,0\n1,,10,0,,11,u,0,0,0,0,0,0\n");
  TraceReader reader(TraceOptions{.bad_lines = BadLinePolicy::kFail});
  const absl::Status s = reader.ReadTaskEvents(tasks, "t.csv");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("t.csv:2: bad event type"));
}

TEST(TraceReaderTest, SubsamplesJobsAndMachinesDeterministically) {
  std::string machines_csv, tasks_csv;
  for (int m = 1; m <= 1000; ++m)
    machines_csv += "0," + std::to_string(m) + ",0,p,0.5,0.5\n";
  for (int j = 1; j <= 1000; ++j) {
    tasks_csv += "5,," + std::to_string(j) + ",0,,0,u,0,0,0.1,0.1,0,0\n";
    tasks_csv += "6,," + std::to_string(j) + ",0,,1,u,0,0,0.1,0.1,0,0\n";
  }
  auto read = [&](TraceOptions options) {
    TraceReader reader(options);
    std::istringstream m(machines_csv), t(tasks_csv);
    EXPECT_TRUE(reader.ReadMachineEvents(m, "m").ok());
    EXPECT_TRUE(reader.ReadTaskEvents(t, "t").ok());
    return reader.Build();
  };
  const Workload half = read({.machine_fraction = 0.5, .job_fraction = 0.25});
  EXPECT_NEAR(static_cast<double>(half.machines.size()), 500, 60);
  EXPECT_NEAR(static_cast<double>(half.tasks.size()), 250, 50);
  const Workload again = read({.machine_fraction = 0.5, .job_fraction = 0.25});
  EXPECT_EQ(again.tasks.size(), half.tasks.size());
  const Workload capped = read({.max_machines = 10, .max_jobs = 7});
  EXPECT_EQ(capped.machines.size(), 10u);
  EXPECT_EQ(capped.tasks.size(), 7u);
}

}  // namespace
}  // namespace flowsched::sim
