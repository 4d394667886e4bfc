#include "tools/sim/report.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace flowsched::sim {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool GnuplotOnPath() {
  return std::system("command -v gnuplot >/dev/null 2>&1") == 0;
}

class WritePlotsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::path(::testing::TempDir()) /
        ("plots_" +
         std::string(
             ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  // Writes each result's CSVs, as `flowsched simulate` does before plotting.
  std::string Plot(const std::vector<SimResult>& results) {
    for (const SimResult& r : results) {
      EXPECT_TRUE(WriteSchedulerCsvs(r, dir_.string()).ok());
    }
    return WritePlots(results, dir_.string());
  }
  fs::path dir_;
};

SimResult Placing(const std::string& scheduler) {
  SimResult r;
  r.scheduler = scheduler;
  r.placements.push_back(
      {.task = 1, .job = 1, .submit_us = 0, .placed_us = 2'000});
  r.placements.push_back(
      {.task = 2, .job = 1, .submit_us = 0, .placed_us = 9'000});
  r.rounds.push_back({.round = 1, .start_us = 1'000, .runtime_ms = 3.5});
  r.rounds.push_back({.round = 2, .start_us = 8'000, .runtime_ms = 4.0});
  return r;
}

// A run too short to place anything after time 0 used to write plot
// commands over empty CSVs, which gnuplot rejects ("x range is invalid").
TEST_F(WritePlotsTest, NothingPlacedWritesNoPlotCommand) {
  SimResult idle;
  idle.scheduler = "flow:quincy";
  const std::string line = Plot({idle});
  EXPECT_EQ(line.rfind("no plots:", 0), 0u) << line;
  const std::string script = ReadFile(dir_ / "plots.gp");
  EXPECT_EQ(script.find("plot '"), std::string::npos) << script;
}

TEST_F(WritePlotsTest, SchedulersWithoutSamplesAreLeftOut) {
  SimResult idle;
  idle.scheduler = "greedy";
  const std::string line = Plot({Placing("flow:quincy"), idle});
  const std::string script = ReadFile(dir_ / "plots.gp");
  EXPECT_NE(script.find("'flow-quincy_latency_cdf.csv'"), std::string::npos);
  EXPECT_NE(script.find("'flow-quincy_rounds.csv'"), std::string::npos);
  EXPECT_EQ(script.find("greedy_latency_cdf.csv"), std::string::npos) << script;
  if (GnuplotOnPath()) {
    EXPECT_EQ(line.rfind("plots:", 0), 0u) << line;
    EXPECT_TRUE(fs::exists(dir_ / "latency_cdf.png"));
    EXPECT_TRUE(fs::exists(dir_ / "solver_runtime.png"));
  }
}

// Baselines alone: the latency CDF is drawn, the flow-runtime plot is not.
TEST_F(WritePlotsTest, NoFlowSchedulerSkipsTheRuntimePlot) {
  const std::string line = Plot({Placing("greedy")});
  const std::string script = ReadFile(dir_ / "plots.gp");
  EXPECT_NE(script.find("'greedy_latency_cdf.csv'"), std::string::npos);
  EXPECT_EQ(script.find("solver_runtime.png'"), std::string::npos) << script;
  if (GnuplotOnPath()) {
    EXPECT_EQ(line, "plots: " + (dir_ / "latency_cdf.png").string());
  }
}

}  // namespace
}  // namespace flowsched::sim
