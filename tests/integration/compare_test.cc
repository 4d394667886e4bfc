// `flowsched compare` replays one event log through the flow scheduler and
// the baselines: every scheduler places the same number of tasks on this
// under-subscribed workload, no one over-commits, and Quincy's
// locality-aware costs read more input locally than the greedy baseline.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace {

struct Row {
  long placed = 0;
  double local_pct = 0;
};

std::string RunCommand(const std::string& command) {
  const std::string out =
      (std::filesystem::temp_directory_path() / "flowsched-compare.out")
          .string();
  EXPECT_EQ(std::system((command + " > " + out).c_str()), 0) << command;
  std::ifstream in(out);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

TEST(CompareTest, QuincyReadsMoreInputLocallyThanGreedy) {
  const std::string bin = FLOWSCHED_BINARY;
  const std::string log =
      (std::filesystem::temp_directory_path() / "flowsched-compare.jsonl")
          .string();
  RunCommand(bin +
             " generate --machines 120 --slots 4 --racks 6 --jobs 40 "
             "--tasks-per-job 10 --locality > " +
             log + " && cat " + log);
  const std::string table = RunCommand(
      bin + " compare " + log +
      " --round-every 20 --schedulers flow:quincy-qfp,greedy,filter-score");
  std::map<std::string, Row> rows;
  std::istringstream lines(table);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name, local;
    long rounds = 0, placed = 0, waiting = 0, rejected = 0;
    double ms = 0;
    if (!(fields >> name >> rounds >> placed >> waiting >> rejected >> ms >>
          local)) {
      continue;
    }
    rows[name] = Row{placed, std::stod(local)};
  }
  ASSERT_EQ(rows.size(), 3u) << table;
  for (const auto& [name, row] : rows) {
    EXPECT_EQ(row.placed, 400) << name << "\n" << table;
  }
  EXPECT_GT(rows["flow:quincy-qfp"].local_pct, rows["greedy"].local_pct + 5)
      << table;
}

}  // namespace
