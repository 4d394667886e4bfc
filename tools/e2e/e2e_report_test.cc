#include "tools/e2e/e2e_report.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace flowsched::e2e {
namespace {

TEST(SummarizeTest, NearestRankPercentiles) {
  std::vector<double> samples;
  for (int i = 100; i >= 1; --i) samples.push_back(i);  // unsorted input
  const LatencySummary s = Summarize(samples);
  EXPECT_EQ(s.count, 100u);
  EXPECT_EQ(s.min_ms, 1);
  EXPECT_EQ(s.p50_ms, 50);
  EXPECT_EQ(s.p90_ms, 90);
  EXPECT_EQ(s.p99_ms, 99);
  EXPECT_EQ(s.max_ms, 100);
  EXPECT_DOUBLE_EQ(s.mean_ms, 50.5);
}

TEST(SummarizeTest, FewAndNoSamples) {
  EXPECT_EQ(Summarize({}).count, 0u);
  const LatencySummary one = Summarize({7.5});
  EXPECT_EQ(one.p50_ms, 7.5);
  EXPECT_EQ(one.p99_ms, 7.5);
  // With 20 samples p99 is the maximum.
  std::vector<double> twenty(20, 1.0);
  twenty.back() = 9;
  EXPECT_EQ(Summarize(twenty).p99_ms, 9);
}

TEST(WriteCsvTest, HeaderAndRowHaveTheSameColumns) {
  E2eResult r;
  r.machines = 100;
  r.policy = "load-spreading";
  r.restart_signal = "term";
  r.latency = Summarize({1, 2, 3});
  const std::string path =
      (std::filesystem::temp_directory_path() / "e2e_report_test.csv").string();
  ASSERT_TRUE(WriteCsv(r, path).ok());
  std::ifstream in(path);
  std::string header, row, extra;
  ASSERT_TRUE(std::getline(in, header));
  ASSERT_TRUE(std::getline(in, row));
  EXPECT_FALSE(std::getline(in, extra));
  const auto columns = [](const std::string& line) {
    return std::count(line.begin(), line.end(), ',') + 1;
  };
  EXPECT_EQ(columns(header), columns(row));
  EXPECT_THAT(header, testing::StartsWith("machines,slots,"));
  EXPECT_THAT(row, testing::StartsWith("100,"));
  EXPECT_THAT(row, testing::HasSubstr(",load-spreading,"));
  std::filesystem::remove(path);
}

TEST(PrintTableTest, NamesEveryMeasurement) {
  E2eResult r;
  r.restart_signal = "kill";
  std::ostringstream out;
  PrintTable(r, out);
  for (const char* text :
       {"ingested by the graph manager", "event-to-placement latency", "rounds",
        "SIGKILL", "ready after"}) {
    EXPECT_THAT(out.str(), testing::HasSubstr(text));
  }
}

}  // namespace
}  // namespace flowsched::e2e
