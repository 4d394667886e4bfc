#include "tools/flowsched/config/config_flags.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/flowsched/config/config_parser.h"

namespace flowsched::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A command line shaped like flowsched's: common flags on the root, a
// graph-manager and a broker subcommand with flags of their own, and an
// unrelated command that also has a --policy flag.
struct FakeCli {
  CLI::App root{"fake"};
  std::string data_dir = "flowsched-data";
  std::string log_level = "info";
  std::vector<std::string> kafka;
  CLI::App* graph_manager = nullptr;
  int round_timeout_ms = 15'000;
  uint64_t cut_every_events = 0;
  bool ha = false;
  std::string policy = "load-spreading";
  int max_batch = 5000;
  CLI::App* broker = nullptr;
  int broker_count = 3;
  CLI::App* compare = nullptr;
  std::string compare_policy = "flow:load-spreading";

  FakeCli() {
    root.fallthrough();
    root.add_option("--data-dir", data_dir);
    root.add_option("--log-level", log_level);
    root.add_option("--kafka", kafka);
    graph_manager = root.add_subcommand("graph-manager");
    graph_manager->add_option("--round-timeout-ms", round_timeout_ms);
    graph_manager->add_option("--cut-every-events", cut_every_events);
    graph_manager->add_flag("--ha", ha);
    graph_manager->add_option("--policy", policy);
    graph_manager->add_option("--max-batch", max_batch);
    broker = root.add_subcommand("broker");
    broker->add_option("--broker-count", broker_count)->check(CLI::Range(1, 4));
    compare = root.add_subcommand("compare");
    compare->add_option("--policy", compare_policy);
  }

  CLI::App& Parse(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());  // CLI11 wants them reversed
    root.parse(args);
    return *root.get_subcommands().front();
  }
};

Config FileConfig() {
  auto config = ParseConfig(R"(
common: {data_dir: /from/file, log_level: warn, kafka: {acks: all}}
graph_manager: {round_timeout_ms: 20000, cut_every_events: 7, ha: true}
broker: {broker_count: 8}
policy: {name: cpu-memory}
)");
  EXPECT_TRUE(config.ok()) << config.status();
  return *config;
}

TEST(ConfigFlagsTest, FlagsBeatTheFileWhichBeatsTheDefaults) {
  FakeCli cli;
  CLI::App& command = cli.Parse(
      {"graph-manager", "--round-timeout-ms", "999", "--log-level", "debug"});
  EXPECT_THAT(ApplyConfigToFlags(FileConfig(), cli.root, command), IsEmpty());
  EXPECT_EQ(cli.round_timeout_ms, 999);   // flag
  EXPECT_EQ(cli.log_level, "debug");      // common flag
  EXPECT_EQ(cli.cut_every_events, 7u);    // file
  EXPECT_TRUE(cli.ha);                    // file, a boolean flag
  EXPECT_EQ(cli.policy, "cpu-memory");    // file, policy.name
  EXPECT_EQ(cli.data_dir, "/from/file");  // file, common
  EXPECT_THAT(cli.kafka, ElementsAre("acks=all"));
  EXPECT_EQ(cli.max_batch, 5000);  // neither: the default
}

TEST(ConfigFlagsTest, AFlagCanTurnABooleanOfTheFileOff) {
  FakeCli cli;
  CLI::App& command = cli.Parse({"graph-manager", "--ha=false"});
  EXPECT_THAT(ApplyConfigToFlags(FileConfig(), cli.root, command), IsEmpty());
  EXPECT_FALSE(cli.ha);
}

TEST(ConfigFlagsTest, OnlyTheCommandsOfAFieldGetIt) {
  FakeCli cli;
  CLI::App& command = cli.Parse({"compare"});
  EXPECT_THAT(ApplyConfigToFlags(FileConfig(), cli.root, command), IsEmpty());
  EXPECT_EQ(cli.compare_policy, "flow:load-spreading");  // not policy.name
  EXPECT_EQ(cli.data_dir, "/from/file");  // common fields reach everyone
}

TEST(ConfigFlagsTest, AValueTheFlagRefusesIsAProblem) {
  FakeCli cli;
  CLI::App& command = cli.Parse({"broker"});
  EXPECT_THAT(
      ApplyConfigToFlags(FileConfig(), cli.root, command),
      ElementsAre(::testing::Field(&ConfigProblem::why,
                                   HasSubstr("refused by --broker-count"))));
}

TEST(ConfigFlagsTest, OverlayTakesTheGivenFlagsOfEveryService) {
  CLI::App root{"fake"};
  root.fallthrough();
  std::string data_dir;
  root.add_option("--data-dir", data_dir);
  CLI::App* show = root.add_subcommand("show");
  AddServiceFieldFlags(*show);
  std::vector<std::string> args = {"show",        "--max-batch", "10",
                                   "--standby",   "--data-dir",  "/d",
                                   "--algorithm", "ssp"};
  std::reverse(args.begin(), args.end());
  root.parse(args);
  Config config = FileConfig();
  EXPECT_THAT(OverlayGivenFlags(config, root, *show), IsEmpty());
  EXPECT_EQ(config.graph_manager.max_batch, 10);
  EXPECT_TRUE(config.solver_worker.standby);
  EXPECT_EQ(config.common.data_dir, "/d");
  EXPECT_EQ(config.solver_worker.algorithm, "ssp");
  EXPECT_EQ(config.graph_manager.round_timeout_ms, 20000);  // the file's
  EXPECT_EQ(config.common.log_level, "warn");               // the file's
  EXPECT_EQ(config.broker.broker_count, 8);
}

// The file's policy and its parameters reach --policy as one spec; a
// --policy on the command line replaces both, and `config show` splits it.
TEST(ConfigFlagsTest, PolicyParametersTravelAsOneSpec) {
  auto file = ParseConfig(
      "policy: {name: quincy-qfp, parameters: {xi: 20, omega: 1.5}}\n");
  ASSERT_TRUE(file.ok()) << file.status();
  FakeCli cli;
  CLI::App& command = cli.Parse({"graph-manager"});
  EXPECT_THAT(ApplyConfigToFlags(*file, cli.root, command), IsEmpty());
  EXPECT_EQ(cli.policy, "quincy-qfp:omega=1.5,xi=20");

  CLI::App root{"fake"};
  CLI::App* show = root.add_subcommand("show");
  AddServiceFieldFlags(*show);
  std::vector<std::string> args = {"show", "--policy",
                                   "cpu-memory:util_scale=2000"};
  std::reverse(args.begin(), args.end());
  root.parse(args);
  Config config = *file;
  EXPECT_THAT(OverlayGivenFlags(config, root, *show), IsEmpty());
  EXPECT_EQ(config.policy.name, "cpu-memory");
  EXPECT_THAT(
      config.policy.parameters,
      ElementsAre(std::pair<const std::string, double>("util_scale", 2000)));
}

TEST(ConfigFlagsTest, OverlayRefusesBadFlagValuesWithThePath) {
  CLI::App root{"fake"};
  CLI::App* show = root.add_subcommand("show");
  AddServiceFieldFlags(*show);
  std::vector<std::string> args = {"show", "--round-timeout-ms", "abc"};
  std::reverse(args.begin(), args.end());
  root.parse(args);
  Config config;
  const auto problems = OverlayGivenFlags(config, root, *show);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].ToString(),
            "graph_manager.round_timeout_ms: --round-timeout-ms must be an "
            "integer in [100, 3600000], got \"abc\"");
}

}  // namespace
}  // namespace flowsched::config
