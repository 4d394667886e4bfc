#include "services/flow/terms/running_time_term.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "services/solver/int128.h"

namespace flowsched::flow {
namespace {

constexpr int64_t kRunTestSecond = 1'000'000;
constexpr int64_t kRunTestCap = int64_t{1} << 20;

// The defaults of QuincyNetworkParams: 100 ms steps, 3 bits, stay bonus 1.
RunningTimeTerm DefaultRunningTerm() { return {100'000, 3, kRunTestCap, 1}; }

TEST(RunningTimeTermTest, IsDataCostLessThetaAndTheStayBonus) {
  const RunningTimeTerm term(100'000, 3, /*cap=*/10'000, /*stay_bonus=*/1);
  EXPECT_EQ(term.Cost(500, 0), 499);
  EXPECT_EQ(term.Cost(500, kRunTestSecond), 500 - 1024 - 1);
  EXPECT_EQ(term.Cost(500, int64_t{1} << 50), -20'000);  // the floor
  EXPECT_EQ(term.NextChangeMicros(500, int64_t{1} << 50),
            RunningTimeTerm::kNever);
  EXPECT_EQ(term.NextChangeMicros(500, 0), 100'000);
}

TEST(RunningTimeTermTest, PricedInStepsThenThreeSignificantBits) {
  const RunningTimeTerm defaults = DefaultRunningTerm();
  EXPECT_EQ(defaults.PricedRunMicros(kRunTestSecond / 20), 0);
  EXPECT_EQ(defaults.PricedRunMicros(kRunTestSecond / 2 + 1),
            kRunTestSecond / 2);
  EXPECT_EQ(defaults.PricedRunMicros(20 * kRunTestSecond),
            19'200'000);  // 1.6 s
  const RunningTimeTerm term(kRunTestSecond, 3, kRunTestCap, 1);
  EXPECT_EQ(term.PricedRunMicros(-5), 0);
  EXPECT_EQ(term.PricedRunMicros(kRunTestSecond / 2), 0);
  EXPECT_EQ(term.PricedRunMicros(3 * kRunTestSecond / 2), kRunTestSecond);
  EXPECT_EQ(term.PricedRunMicros(15 * kRunTestSecond + 1), 15 * kRunTestSecond);
  EXPECT_EQ(term.PricedRunMicros(17 * kRunTestSecond),
            16 * kRunTestSecond);  // step 2 s
  EXPECT_EQ(term.PricedRunMicros(100 * kRunTestSecond),
            96 * kRunTestSecond);  // step 8 s
  EXPECT_EQ(term.NextRunPriceMicros(100 * kRunTestSecond),
            104 * kRunTestSecond);
  EXPECT_EQ(term.NextRunPriceMicros(kRunTestSecond / 2), kRunTestSecond);
  // Never more than 1/8 (bits = 3) below theta once past 8 s, never
  // decreasing, and the cost changes exactly where NextChangeMicros says.
  int64_t last = 0;
  for (int64_t run = 0; run < 5000 * kRunTestSecond;
       run += 7 * kRunTestSecond / 3) {
    const int64_t priced = term.PricedRunMicros(run);
    EXPECT_LE(priced, run);
    EXPECT_GE(priced, last);
    if (run >= 8 * kRunTestSecond) {
      EXPECT_GT(priced, run - run / 8 - 1) << run;
    }
    const int64_t after = term.NextChangeMicros(0, run);
    if (after != RunningTimeTerm::kNever) {
      EXPECT_EQ(term.Cost(0, run + after - 1), term.Cost(0, run)) << run;
      EXPECT_LT(term.Cost(0, run + after), term.Cost(0, run)) << run;
    }
    last = priced;
  }
}

// Ten hours of running cost the floor, which keeps cost scaling in range
// at Google scale ((n + 1) max|cost| <= 2^58, and its scaled prices, a few
// max|cost| times n + 1 on these short paths, within 2^60; 12,500
// machines, 150,000 tasks and their racks and jobs: about 165,000 nodes).
TEST(RunningTimeTermTest, LongRunningCostsFitCostScalingAtGoogleScale) {
  const int64_t hours = int64_t{3600} * kRunTestSecond * 10;
  EXPECT_EQ(DefaultRunningTerm().Cost(0, hours), -2 * kRunTestCap);
  const solver::Int128 n1 = 165'000 + 1;
  EXPECT_LE(n1 * (2 * kRunTestCap), solver::Int128{1} << 58);
  EXPECT_LT(16 * n1 * (2 * kRunTestCap), solver::Int128{1} << 60);
}

}  // namespace
}  // namespace flowsched::flow
