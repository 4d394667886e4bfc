#include "services/flow/terms/wait_time_term.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace flowsched::flow {
namespace {

constexpr int64_t kWaitTestSecond = 1'000'000;

TEST(WaitTimeTermTest, IsOmegaPerSecondInUnitsUpToTheCap) {
  const WaitTimeTerm term(/*omega=*/0.5, /*cap=*/10'000);
  EXPECT_EQ(term.Cost(0), 0);
  EXPECT_EQ(term.Cost(10 * kWaitTestSecond), 5120);  // 0.5 * 1024 * 10
  EXPECT_EQ(term.Cost(kWaitTestSecond / 1000), 1);   // 0.512 rounds to 1
  EXPECT_EQ(term.Cost(kWaitTestSecond / 2000), 0);   // 0.256 rounds to 0
  EXPECT_EQ(term.Cost(-kWaitTestSecond), 0);
  EXPECT_EQ(term.Cost(int64_t{1} << 50), 10'000);
  // Never decreasing in the wait.
  int64_t last = 0;
  for (int64_t wait = 0; wait < 40 * kWaitTestSecond;
       wait += kWaitTestSecond / 7) {
    EXPECT_GE(term.Cost(wait), last);
    last = term.Cost(wait);
  }
  EXPECT_EQ(WaitTimeTerm(0, 10'000).Cost(kWaitTestSecond), 0);
}

}  // namespace
}  // namespace flowsched::flow
