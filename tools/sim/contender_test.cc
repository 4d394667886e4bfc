#include "tools/sim/contender.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace flowsched::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(SplitContenderListTest, PolicyParametersStayWithTheirPolicy) {
  EXPECT_THAT(SplitContenderList("fgd,flow:gpu-fgd:best_fit=1,first_fit=0,"
                                 "random,flow:cpu-memory"),
              ElementsAre("fgd", "flow:gpu-fgd:best_fit=1,first_fit=0",
                          "random", "flow:cpu-memory"));
  // A second flow policy starts a new contender even with parameters.
  EXPECT_THAT(SplitContenderList("flow:gpu-fgd:a=1,flow:gpu-fgd:a=2,b=3"),
              ElementsAre("flow:gpu-fgd:a=1", "flow:gpu-fgd:a=2,b=3"));
}

TEST(SplitContenderListTest, EmptyPiecesAreSkippedAndStrayPairsKept) {
  EXPECT_THAT(SplitContenderList(",fgd,,best-fit,"),
              ElementsAre("fgd", "best-fit"));
  EXPECT_THAT(SplitContenderList(""), IsEmpty());
  // "a=1" after a baseline is no parameter of it: kept, so MakeContender
  // names it in its error.
  EXPECT_THAT(SplitContenderList("fgd,a=1"), ElementsAre("fgd", "a=1"));
  EXPECT_THAT(SplitContenderList("a=1"), ElementsAre("a=1"));
}

}  // namespace
}  // namespace flowsched::sim
