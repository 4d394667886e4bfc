#include "tools/flowsched/deployment.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"

namespace flowsched::tools {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;
using ::testing::HasSubstr;

Deployment Deterministic() {
  Deployment d;
  d.cut_every_events = 50;
  d.solver_workers = 2;
  d.ha = true;
  d.brokers = "kafka-1:9092,kafka-2:9092";
  d.legacy_broker = true;
  d.topic_prefix = "prod.";
  d.initial_policy = "quincy";
  d.algorithm = "cost_scaling";
  d.log_format = "json";
  return d;
}

TEST(DeploymentFileTest, FormatThenParseGivesTheSameDeployment) {
  for (const Deployment& d : {Deployment{}, Deterministic()}) {
    auto parsed = ParseDeployment(FormatDeployment(d));
    ASSERT_THAT(parsed, IsOk());
    EXPECT_EQ(*parsed, d) << FormatDeployment(d);
  }
}

TEST(DeploymentFileTest, EmbeddedBrokerIsWrittenByName) {
  EXPECT_THAT(FormatDeployment(Deployment{}),
              HasSubstr("\nbrokers embedded\n"));
}

TEST(DeploymentFileTest, RefusesAnythingButACompleteVersionOneFile) {
  const std::string good = FormatDeployment(Deterministic());
  const auto refused = [](const std::string& text, const std::string& why) {
    EXPECT_THAT(ParseDeployment(text),
                StatusIs(absl::StatusCode::kInvalidArgument, why))
        << text;
  };
  refused("", "no version line");
  refused("# only a comment\n", "no version line");
  refused("\x01\x02garbage\xff\n", "expected 'version 1' first");
  refused(absl::StrReplaceAll(good, {{"version 1", "version 2"}}),
          "version 2 is not supported");
  refused(absl::StrReplaceAll(good, {{"version 1", "version one"}}),
          "expected 'version 1' first");
  refused(good + "color blue\n", "unknown key 'color'");
  refused(good + "ha false\n", "'ha' repeats line");
  refused(absl::StrReplaceAll(good,
                              {{"cut-every-events 50", "cut-every-events -3"}}),
          "'cut-every-events' is '-3', expected a count");
  refused(
      absl::StrReplaceAll(good, {{"solver-workers 2", "solver-workers 17"}}),
      "expected 1 to 16");
  refused(absl::StrReplaceAll(good, {{"ha true", "ha yes"}}),
          "expected true or false");
  refused(absl::StrReplaceAll(good, {{"log-format json", "log-format xml"}}),
          "expected text or json");
  refused(absl::StrReplaceAll(good, {{"algorithm cost_scaling\n", ""}}),
          "missing algorithm");
  refused(absl::StrReplaceAll(good, {{"topic-prefix prod.", "topic-prefix"}}),
          "'topic-prefix' is ''");
}

class DeploymentDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            absl::StrCat("flowsched-deployment-test-", ::getpid()))
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(DeploymentDirTest, MissingFileIsNoDeploymentAndWrittenOneReadsBack) {
  auto none = ReadDeploymentFile(dir_);
  ASSERT_THAT(none, IsOk());
  EXPECT_FALSE(none->has_value());
  ASSERT_THAT(WriteDeploymentFile(dir_, Deterministic()), IsOk());
  auto read = ReadDeploymentFile(dir_);
  ASSERT_THAT(read, IsOk());
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ(**read, Deterministic());
  // Atomic write: no temp file is left beside it.
  int files = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator(dir_)) {
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST_F(DeploymentDirTest, GarbledFileIsDataLossNamingThePath) {
  std::ofstream(DeploymentPath(dir_)) << "version 7\nbrokers embedded\n";
  EXPECT_THAT(ReadDeploymentFile(dir_),
              StatusIs(absl::StatusCode::kDataLoss,
                       DeploymentPath(dir_) + " is not a valid deployment "
                                              "file (line 1: version 7"));
}

TEST(ResolveDeploymentTest, FirstUpTakesTheRequestOverDefaults) {
  DeploymentRequest request;
  request.cut_every_events = 50;
  request.log_format = "json";
  auto resolved = ResolveDeployment(std::nullopt, request, "d");
  ASSERT_THAT(resolved, IsOk());
  Deployment expected;
  expected.cut_every_events = 50;
  expected.log_format = "json";
  EXPECT_EQ(*resolved, expected);
}

TEST(ResolveDeploymentTest, UpWithoutFlagsKeepsTheStoredSettings) {
  auto resolved = ResolveDeployment(Deterministic(), {}, "d");
  ASSERT_THAT(resolved, IsOk());
  EXPECT_EQ(*resolved, Deterministic());
}

TEST(ResolveDeploymentTest, RequestEqualToTheStoredValueIsNoConflict) {
  DeploymentRequest request;
  request.cut_every_events = 50;
  request.solver_workers = 2;
  request.brokers = "kafka-1:9092,kafka-2:9092";
  EXPECT_THAT(ResolveDeployment(Deterministic(), request, "d"), IsOk());
}

TEST(ResolveDeploymentTest, ContradictionNamesStoredRequestedAndTheWayOut) {
  Deployment stored;
  stored.cut_every_events = 50;
  DeploymentRequest request;
  request.cut_every_events = 0;
  request.brokers = "other:9092";
  auto resolved = ResolveDeployment(stored, request, "d");
  EXPECT_THAT(resolved,
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "--cut-every-events: stored 50, requested 0 (rounds "
                       "follow the clock)"));
  EXPECT_THAT(resolved, StatusIs(absl::StatusCode::kFailedPrecondition,
                                 "--brokers: stored the embedded broker, "
                                 "requested other:9092"));
  EXPECT_THAT(resolved, StatusIs(absl::StatusCode::kFailedPrecondition,
                                 "`flowsched down --data-dir d`, then "
                                 "`flowsched up --data-dir d "
                                 "--reset-deployment`"));
}

TEST(ResolveDeploymentTest, EveryFixedSettingIsChecked) {
  const Deployment stored = Deterministic();
  const auto conflicts = [&](DeploymentRequest request, const char* flag) {
    EXPECT_THAT(ResolveDeployment(stored, request, "d"),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         absl::StrCat(flag, ": stored")));
  };
  conflicts({.brokers = ""}, "--brokers");
  conflicts({.legacy_broker = false}, "--legacy-broker");
  conflicts({.topic_prefix = "flowsched."}, "--topic-prefix");
  conflicts({.cut_every_events = 51}, "--cut-every-events");
  conflicts({.cut_at_ticks = true}, "--cut-at-ticks");
  conflicts({.initial_policy = "load-spreading"}, "--policy");
  conflicts({.algorithm = "incremental"}, "--algorithm");
  conflicts({.solver_workers = 1}, "--solver-workers");
  conflicts({.ha = false}, "--ha");
}

TEST(ResolveDeploymentTest, PolicyConflictPointsAtPolicySet) {
  DeploymentRequest request;
  request.initial_policy = "cpu-memory";
  EXPECT_THAT(ResolveDeployment(Deployment{}, request, "d"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "switch the running one with `flowsched policy set "
                       "cpu-memory`"));
}

TEST(ResolveDeploymentTest, LogFormatMayChange) {
  DeploymentRequest request;
  request.log_format = "text";
  auto resolved = ResolveDeployment(Deterministic(), request, "d");
  ASSERT_THAT(resolved, IsOk());
  EXPECT_EQ(resolved->log_format, "text");
  EXPECT_EQ(resolved->cut_every_events, 50u);
}

TEST(ResolveDeploymentTest, InvalidRequestIsInvalidArgument) {
  EXPECT_THAT(ResolveDeployment(std::nullopt, {.solver_workers = 0}, "d"),
              StatusIs(absl::StatusCode::kInvalidArgument, "outside 1 to 16"));
  EXPECT_THAT(ResolveDeployment(std::nullopt, {.log_format = "xml"}, "d"),
              StatusIs(absl::StatusCode::kInvalidArgument, "text or json"));
}

}  // namespace
}  // namespace flowsched::tools
