#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/flow/scheduling_policy.h"

namespace flowsched::flow {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

// The graph manager validates SetPolicy events and restores the stored
// policy by these names, so every listed name must build, under that name.
TEST(PolicyRegistryTest, EveryListedNameBuildsThatPolicy) {
  ASSERT_FALSE(PolicyNames().empty());
  EXPECT_EQ(PolicyNames().front(), "load-spreading");
  for (const std::string& name : PolicyNames()) {
    auto policy = MakePolicy(name);
    ASSERT_THAT(policy.status(), IsOk()) << name;
    EXPECT_EQ((*policy)->name(), name);
  }
}

TEST(PolicyRegistryTest, UnknownNameListsTheKnownOnes) {
  EXPECT_THAT(MakePolicy("fifo"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unknown policy 'fifo'; known: load-spreading, "
                       "cpu-memory"));
}

}  // namespace
}  // namespace flowsched::flow
