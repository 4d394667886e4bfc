// `flowsched bench e2e` at a small scale: the whole harness runs through the
// embedded broker and the real service processes, every submitted task is
// placed, every latency sample is positive, the restart is measured on the
// full state, and the CSV holds one row with the measurements.

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace {

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, ',')) fields.push_back(field);
  return fields;
}

// Runs the benchmark and returns its CSV row by column name.
std::map<std::string, std::string> RunBench(const std::string& name,
                                            const std::string& extra) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("flowsched-bench-e2e-test-" + name);
  std::filesystem::remove_all(dir);
  const std::string csv = dir.string() + ".csv";
  std::filesystem::remove(csv);
  const std::string command =
      std::string(FLOWSCHED_BINARY) + " bench e2e --data-dir " + dir.string() +
      " --machines 100 --slots 12 --tasks 1000 --churn 200 --duration 3 "
      "--timeout 60 --csv " +
      csv + " " + extra + " > " + dir.string() + ".out 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream out(dir.string() + ".out");
  std::stringstream printed;
  printed << out.rdbuf();
  // The data directory is removed unless --keep.
  EXPECT_FALSE(std::filesystem::exists(dir)) << printed.str();
  std::ifstream in(csv);
  std::string header, row;
  EXPECT_TRUE(std::getline(in, header) && std::getline(in, row))
      << printed.str();
  const std::vector<std::string> names = SplitCsvLine(header);
  const std::vector<std::string> values = SplitCsvLine(row);
  EXPECT_EQ(names.size(), values.size()) << header << "\n" << row;
  std::map<std::string, std::string> result;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    result[names[i]] = values[i];
  }
  if (!::testing::Test::HasFailure()) {
    std::filesystem::remove(csv);
    std::filesystem::remove(dir.string() + ".out");
  }
  return result;
}

double Number(const std::map<std::string, std::string>& row,
              const std::string& column) {
  auto it = row.find(column);
  EXPECT_NE(it, row.end()) << column;
  return it == row.end() ? -1 : std::stod(it->second);
}

void ExpectCompleteRun(const std::map<std::string, std::string>& row) {
  EXPECT_EQ(Number(row, "tasks"), 1000);
  // Every arrival of the steady state was placed and timed, positively.
  EXPECT_GT(Number(row, "arrivals"), 0);
  EXPECT_EQ(Number(row, "latency_samples"), Number(row, "arrivals"));
  EXPECT_EQ(Number(row, "unplaced"), 0);
  EXPECT_GT(Number(row, "latency_min_ms"), 0);
  EXPECT_LE(Number(row, "latency_p50_ms"), Number(row, "latency_p99_ms"));
  EXPECT_LE(Number(row, "latency_p99_ms"), Number(row, "latency_max_ms"));
  EXPECT_EQ(Number(row, "events_rejected"), 0);
  // The burst was ingested and placed.
  EXPECT_EQ(Number(row, "burst_events"), 1000 - Number(row, "jobs"));
  EXPECT_GT(Number(row, "ingest_events_per_s"), 0);
  EXPECT_GT(Number(row, "rounds"), 0);
  EXPECT_GT(Number(row, "rounds_per_s"), 0);
  // The restarted graph manager restored every task (1,000 plus the
  // arrivals, minus as many completions, give or take one).
  EXPECT_EQ(Number(row, "restart_tasks"),
            1000 + Number(row, "arrivals") - Number(row, "completions"));
  EXPECT_GT(Number(row, "restart_ready_ms"), 0);
  EXPECT_GE(Number(row, "restart_next_round_ms"),
            Number(row, "restart_ready_ms"));
}

TEST(BenchE2eTest, SigtermRestart) {
  const auto row = RunBench("term", "--restart term");
  EXPECT_EQ(row.at("restart_signal"), "term");
  ExpectCompleteRun(row);
}

// With the endpoints on and scraped every 0.2 s (the broker, the graph
// manager across its restart, the solver worker), as for measuring what
// metrics cost: the run is as complete, and the scrapes were answered.
TEST(BenchE2eTest, ScrapedMetrics) {
  const auto row = RunBench("scraped",
                            "--restart term --metrics-address 127.0.0.1:0 "
                            "--scrape-every 0.2");
  ExpectCompleteRun(row);
  EXPECT_EQ(Number(row, "scrape_every_s"), 0.2);
  EXPECT_GE(Number(row, "scrapes"), 10);
  EXPECT_GT(Number(row, "scrape_mean_kib"), 1);
  EXPECT_GT(Number(row, "steady_manager_cpu_s"), 0);
  EXPECT_GT(Number(row, "steady_worker_cpu_s"), 0);
}

// A run kept with --keep leaves its services running in the directory: a
// second run there is refused with the way out instead of wiping the
// directory under them, and runs once they are stopped.
TEST(BenchE2eTest, RefusesADirectoryWhoseKeptServicesStillRun) {
  const auto dir =
      std::filesystem::temp_directory_path() / "flowsched-bench-e2e-test-kept";
  std::filesystem::remove_all(dir);
  const std::string bench =
      std::string(FLOWSCHED_BINARY) + " bench e2e --data-dir " + dir.string() +
      " --machines 20 --slots 4 --tasks 40 --churn 20 --duration 1 "
      "--restart none --timeout 60";
  const std::string out = dir.string() + ".out";
  ASSERT_EQ(std::system((bench + " --keep > " + out + " 2>&1").c_str()), 0);
  ASSERT_TRUE(std::filesystem::exists(dir / "status.json"));

  const int refused = std::system((bench + " > " + out + " 2>&1").c_str());
  std::ifstream printed_in(out);
  std::stringstream printed;
  printed << printed_in.rdbuf();
  EXPECT_TRUE(WIFEXITED(refused) && WEXITSTATUS(refused) == 2) << printed.str();
  EXPECT_NE(printed.str().find("still run in"), std::string::npos)
      << printed.str();
  EXPECT_NE(printed.str().find("flowsched down --data-dir"), std::string::npos)
      << printed.str();
  // Refused before anything was touched: the kept run's state is there.
  EXPECT_TRUE(std::filesystem::exists(dir / "status.json"));

  const std::string down = std::string(FLOWSCHED_BINARY) + " down --data-dir " +
                           dir.string() + " > " + out + " 2>&1";
  ASSERT_EQ(std::system(down.c_str()), 0);
  EXPECT_EQ(std::system((bench + " > " + out + " 2>&1").c_str()), 0);
  EXPECT_FALSE(std::filesystem::exists(dir));
  if (!::testing::Test::HasFailure()) std::filesystem::remove(out);
}

TEST(BenchE2eTest, SigkillRestart) {
  const auto row = RunBench("kill", "--restart kill --policy cpu-memory");
  EXPECT_EQ(row.at("restart_signal"), "kill");
  EXPECT_EQ(row.at("policy"), "cpu-memory");
  ExpectCompleteRun(row);
}

}  // namespace
