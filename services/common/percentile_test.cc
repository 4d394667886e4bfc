#include "services/common/percentile.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace flowsched {
namespace {

TEST(PercentileTest, NearestRankIsAlwaysAMeasuredValue) {
  std::vector<double> values;
  for (int i = 1; i <= 20; ++i) values.push_back(i);
  EXPECT_EQ(Percentile(values, 0.5), 10);
  EXPECT_EQ(Percentile(values, 0.9), 18);
  EXPECT_EQ(Percentile(values, 0.99), 20);  // fewer than 100: the maximum
  EXPECT_EQ(Percentile(values, 0.0), 1);
  EXPECT_EQ(Percentile(values, 1.0), 20);
}

TEST(PercentileTest, UnsortedInputAndOneValue) {
  EXPECT_EQ(Percentile({5, 1, 3}, 0.5), 3);
  EXPECT_EQ(Percentile({7}, 0.99), 7);
  EXPECT_TRUE(std::isnan(Percentile({}, 0.5)));
}

TEST(PercentileTest, OutOfRangeRanksAreClamped) {
  const std::vector<double> sorted = {1, 2, 3, 4};
  EXPECT_EQ(NearestRankPercentile(sorted, -1), 1);
  EXPECT_EQ(NearestRankPercentile(sorted, 2), 4);
  EXPECT_EQ(NearestRankPercentile(sorted, 0.25), 1);
  EXPECT_EQ(NearestRankPercentile(sorted, 0.26), 2);
}

}  // namespace
}  // namespace flowsched
