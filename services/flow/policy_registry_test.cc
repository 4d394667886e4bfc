#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/flow/policy_spec.h"
#include "services/flow/scheduling_policy.h"

namespace flowsched::flow {
namespace {

using ::flowsched::testing::IsOk;

// The canonical text of `spec`, or the error's message.
std::string Canonical(std::string_view spec) {
  absl::StatusOr<std::string> canonical = CanonicalPolicySpec(spec);
  return canonical.ok() ? *canonical
                        : absl::StrCat("error: ", canonical.status().message());
}
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

// Every tunable's default lies in its range, and setting it explicitly
// is the same policy as leaving it out.
TEST(PolicySpecTest, DefaultsAreInRangeAndCanonicalFormDropsThem) {
  for (const std::string& name : PolicyNames()) {
    for (const PolicyParameter& p : PolicyParameters(name)) {
      EXPECT_LE(p.min, p.default_value) << name << "." << p.name;
      EXPECT_LE(p.default_value, p.max) << name << "." << p.name;
      const std::string text = absl::StrCat(
          name, ":", p.name, "=", FormatParameterValue(p.default_value));
      EXPECT_EQ(Canonical(text), name) << text;
    }
  }
}

TEST(PolicySpecTest, CanonicalFormSortsKeysAndKeepsOnlyChangedValues) {
  EXPECT_EQ(Canonical(" quincy-qfp : xi = 20 , omega=1.25,psi=1"),
            "quincy-qfp:omega=1.25,xi=20");
  EXPECT_EQ(Canonical("quincy-qfpx:xi=2"), "quincy-qfpx:xi=2");
  EXPECT_EQ(Canonical("quincy-qfpx:xi=20"), "quincy-qfpx");
  EXPECT_EQ(Canonical("load-spreading:per_task_cost=100000"),
            "load-spreading:per_task_cost=100000");
  EXPECT_EQ(Canonical("quincy-qp:delta_rack=0.1000000001"),
            "quincy-qp:delta_rack=0.1000000001");
}

TEST(PolicySpecTest, BadSpecsSayWhy) {
  auto refused = [](std::string_view text, std::string_view why) {
    EXPECT_THAT(ParsePolicySpec(text).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, std::string(why)))
        << text;
    EXPECT_THAT(MakePolicy(text).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, ""))
        << text;
  };
  refused("fifo:x=1", "unknown policy 'fifo'");
  refused("quincy-qfp:omgea=1", "has no parameter 'omgea' (known: omega,");
  refused("quincy-qfp:omega", "expected key=value, got 'omega'");
  refused("quincy-qfp:", "expected key=value, got ''");
  refused("quincy-qfp:omega=fast", "omega must be a number, got 'fast'");
  refused("quincy-qfp:omega=nan", "omega must be a number");
  refused("quincy-qfp:omega=-1", "omega must be in [0, 1000], got -1");
  refused("cpu-memory:util_scale=2.5", "util_scale must be an integer");
  refused("priority:max_priority=1001", "must be in [0, 1000]");
  refused("load-spreading:per_task_cost=1,per_task_cost=2", "given twice");
}

}  // namespace
}  // namespace flowsched::flow
