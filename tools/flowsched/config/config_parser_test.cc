#include "tools/flowsched/config/config_parser.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "tools/flowsched/config/config_emitter.h"

namespace flowsched::config {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

std::vector<std::string> Problems(const std::string& yaml) {
  std::vector<std::string> lines;
  for (const ConfigProblem& problem : CheckConfig(yaml)) {
    lines.push_back(problem.ToString());
  }
  return lines;
}

TEST(ConfigParserTest, EmptyOrCommentOnlyFileIsAllDefaults) {
  for (const std::string yaml : {"", "\n", "# nothing set\n", "---\n"}) {
    auto config = ParseConfig(yaml);
    ASSERT_THAT(config, IsOk()) << yaml;
    EXPECT_EQ(*config, Config()) << yaml;
  }
}

TEST(ConfigParserTest, EmptySectionsKeepTheirDefaults) {
  auto config = ParseConfig("common:\ngraph_manager: {}\npolicy:\n");
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(*config, Config());
}

TEST(ConfigParserTest, ReadsEveryKindOfField) {
  auto config = ParseConfig(R"(
common:
  brokers: kafka-0:9092,kafka-1:9092
  data_dir: /var/lib/flowsched
  topic_prefix: prod.flowsched.
  legacy_broker: true
  kafka: {security.protocol: SSL, linger.ms: 5}
  log_level: warn
broker:
  broker_count: 5
graph_manager:
  round_timeout_ms: 30000
  cut_every_events: 100
  cut_at_ticks: true
  ha: true
  lease_session_timeout_ms: 10000
  max_batch: 2000
  max_tasks_per_job: 5000
  max_task_slots: 64
solver_worker:
  algorithm: cost_scaling
  standby: true
  session_timeout_ms: 7000
up:
  solver_workers: 2
policy:
  name: quincy-qfp
  parameters: {}
)");
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->common.brokers, "kafka-0:9092,kafka-1:9092");
  EXPECT_EQ(config->common.data_dir, "/var/lib/flowsched");
  EXPECT_EQ(config->common.topic_prefix, "prod.flowsched.");
  EXPECT_TRUE(config->common.legacy_broker);
  EXPECT_EQ(config->common.kafka.at("security.protocol"), "SSL");
  EXPECT_EQ(config->common.kafka.at("linger.ms"), "5");
  EXPECT_EQ(config->common.log_level, "warn");
  EXPECT_EQ(config->broker.broker_count, 5);
  EXPECT_EQ(config->graph_manager.round_timeout_ms, 30000);
  EXPECT_EQ(config->graph_manager.cut_every_events, 100);
  EXPECT_TRUE(config->graph_manager.cut_at_ticks);
  EXPECT_TRUE(config->graph_manager.ha);
  EXPECT_EQ(config->graph_manager.lease_session_timeout_ms, 10000);
  EXPECT_EQ(config->graph_manager.max_batch, 2000);
  EXPECT_EQ(config->graph_manager.max_tasks_per_job, 5000);
  EXPECT_EQ(config->graph_manager.max_task_slots, 64);
  EXPECT_EQ(config->solver_worker.algorithm, "cost_scaling");
  EXPECT_TRUE(config->solver_worker.standby);
  EXPECT_EQ(config->solver_worker.session_timeout_ms, 7000);
  EXPECT_EQ(config->up.solver_workers, 2);
  EXPECT_EQ(config->policy.name, "quincy-qfp");
}

// One test per kind of bad field: each names the YAML path, why, and line.
TEST(ConfigParserTest, IntegerThatIsNotANumber) {
  EXPECT_THAT(Problems("graph_manager:\n  cut_every_events: abc\n"),
              ElementsAre("graph_manager.cut_every_events: must be a "
                          "non-negative integer, got \"abc\" (line 2)"));
}

TEST(ConfigParserTest, IntegerOutOfRange) {
  EXPECT_THAT(Problems("graph_manager:\n  round_timeout_ms: 50\n"),
              ElementsAre("graph_manager.round_timeout_ms: must be an "
                          "integer in [100, 3600000], got 50 (line 2)"));
  EXPECT_THAT(Problems("graph_manager: {cut_every_events: -1}"),
              ElementsAre(HasSubstr("must be a non-negative integer, got -1")));
  EXPECT_THAT(Problems("up: {solver_workers: 17}"),
              ElementsAre(HasSubstr("up.solver_workers: must be an integer "
                                    "in [0, 16], got 17")));
}

TEST(ConfigParserTest, QuotedNumberIsAString) {
  EXPECT_THAT(Problems("graph_manager: {max_batch: \"10\"}"),
              ElementsAre(HasSubstr("graph_manager.max_batch: must be an "
                                    "integer in [1, 1000000], got the "
                                    "string \"10\"")));
}

TEST(ConfigParserTest, BooleanOfAnotherSpelling) {
  EXPECT_THAT(Problems("solver_worker:\n  standby: yes\n"),
              ElementsAre("solver_worker.standby: must be true or false, "
                          "got \"yes\" (line 2)"));
}

TEST(ConfigParserTest, UnknownAlgorithmListsTheKnownOnes) {
  const auto problems = Problems("solver_worker: {algorithm: foo}");
  ASSERT_THAT(problems, SizeIs(1));
  EXPECT_THAT(problems[0], HasSubstr("solver_worker.algorithm: unknown "
                                     "\"foo\" (known: incremental, "));
  EXPECT_THAT(problems[0], HasSubstr("cost_scaling"));
}

TEST(ConfigParserTest, UnknownPolicyAndLogLevel) {
  EXPECT_THAT(Problems("policy: {name: quincy-qpf}"),
              ElementsAre(HasSubstr("policy.name: unknown \"quincy-qpf\"")));
  EXPECT_THAT(Problems("common: {log_level: verbose}"),
              ElementsAre(HasSubstr(
                  "common.log_level: unknown \"verbose\" (known: trace, "
                  "debug, info, warn, error, off)")));
}

TEST(ConfigParserTest, BadLogFormatAndMetricsAddress) {
  EXPECT_THAT(Problems("common: {log_format: xml}"),
              ElementsAre(HasSubstr("common.log_format: unknown \"xml\"")));
  EXPECT_THAT(Problems("common: {metrics_address: \"localhost\"}"),
              ElementsAre(HasSubstr("common.metrics_address: ")));
  EXPECT_THAT(Problems("common: {metrics_address: \"127.0.0.1:9464\"}"),
              IsEmpty());
}

TEST(ConfigParserTest, UnknownFieldSuggestsTheIntendedOne) {
  EXPECT_THAT(Problems("graph_manager:\n  max_bach: 10\n"),
              ElementsAre("graph_manager.max_bach: unknown field; did you "
                          "mean max_batch? (line 2)"));
  EXPECT_THAT(Problems("graph_manager: {polcy: quincy-qfp}"),
              ElementsAre(HasSubstr("graph_manager.polcy: unknown field; "
                                    "policy is a top-level section")));
  EXPECT_THAT(Problems("solver_worker: {data_dir: x}"),
              ElementsAre(HasSubstr("did you mean common.data_dir?")));
  EXPECT_THAT(Problems("up: {zzzzzzzzzz: 1}"),
              ElementsAre(HasSubstr("unknown field (known: solver_workers)")));
}

TEST(ConfigParserTest, UnknownSectionSuggestsTheIntendedOne) {
  EXPECT_THAT(Problems("graph_manger: {}\n"),
              ElementsAre(HasSubstr("graph_manger: unknown section; did "
                                    "you mean graph_manager?")));
  EXPECT_THAT(Problems("data_dir: /x\n"),
              ElementsAre(HasSubstr("did you mean common.data_dir?")));
}

TEST(ConfigParserTest, DuplicateKeysNameTheFirst) {
  EXPECT_THAT(Problems("graph_manager:\n  max_batch: 1\n  max_batch: 2\n"),
              ElementsAre("graph_manager.max_batch: duplicate key (first "
                          "at line 2) (line 3)"));
  EXPECT_THAT(Problems("up: {}\nup: {}\n"),
              ElementsAre(HasSubstr("up: duplicate key")));
}

TEST(ConfigParserTest, WrongTypes) {
  EXPECT_THAT(Problems("common: [a, b]"),
              ElementsAre(HasSubstr(
                  "common: must be a mapping of fields, got a sequence")));
  EXPECT_THAT(Problems("common: {data_dir: [a]}"),
              ElementsAre(HasSubstr(
                  "common.data_dir: must be a string, got a sequence")));
  EXPECT_THAT(Problems("common: {kafka: x=y}"),
              ElementsAre(HasSubstr("common.kafka: must be a mapping")));
  EXPECT_THAT(Problems("common: {kafka: {a: {b: c}}}"),
              ElementsAre(HasSubstr(
                  "common.kafka.a: must be a string, got a mapping")));
  EXPECT_THAT(Problems("common: {brokers: }"),
              ElementsAre(HasSubstr("common.brokers: must be a string, got "
                                    "null")));
}

TEST(ConfigParserTest, StringsThatBreakTheirRules) {
  EXPECT_THAT(Problems("common: {data_dir: \"\"}"),
              ElementsAre(HasSubstr("common.data_dir: must not be empty")));
  EXPECT_THAT(Problems("common: {topic_prefix: \"a b\"}"),
              ElementsAre(HasSubstr("common.topic_prefix: may hold only")));
  EXPECT_THAT(Problems("common: {brokers: \"a:1, b:2\"}"),
              ElementsAre(HasSubstr("common.brokers: must be host:port")));
}

TEST(ConfigParserTest, PolicyParametersAreCheckedAgainstThePolicy) {
  auto config = ParseConfig(
      "policy:\n  name: quincy-qfp\n  parameters:\n    omega: 0.75\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->policy.parameters.at("omega"), 0.75);
  EXPECT_THAT(Problems("policy:\n  name: quincy-qfp\n  parameters:\n"
                       "    omgea: 0.5\n"),
              ElementsAre(HasSubstr("policy.parameters.omgea: unknown "
                                    "parameter of policy \"quincy-qfp\" "
                                    "(known: omega, psi, xi,")));
  EXPECT_THAT(Problems("policy:\n  name: quincy-qfp\n  parameters:\n"
                       "    omeg: 0.5\n"),
              ElementsAre(HasSubstr("did you mean omega? (line 4)")));
  EXPECT_THAT(Problems("policy: {name: quincy-qfp, parameters: {xi: -1}}"),
              ElementsAre(HasSubstr("policy.parameters.xi: must be a number "
                                    "in [0, 1000], got -1")));
  EXPECT_THAT(Problems("policy: {name: cpu-memory, parameters: "
                       "{util_scale: 2.5}}"),
              ElementsAre(HasSubstr("policy.parameters.util_scale: must be "
                                    "an integer in [1, 1000000], got 2.5")));
  EXPECT_THAT(Problems("policy: {parameters: [1]}"),
              ElementsAre(HasSubstr("policy.parameters: must be a mapping")));
  EXPECT_THAT(Problems("policy: {name: load-spreading, parameters: {}}"),
              IsEmpty());
  // Values in range that break a relation the policy checks.
  EXPECT_THAT(Problems("policy: {name: profile, parameters: "
                       "{unscheduled_cost: 500}}"),
              ElementsAre(HasSubstr("policy.parameters: policy profile: "
                                    "unscheduled_cost (500) must exceed")));
  EXPECT_THAT(Problems("policy: {name: profile, parameters: "
                       "{spread: 0, pack: 1000}}"),
              IsEmpty());
}

TEST(ConfigParserTest, TopLevelMustBeAMappingOfSections) {
  EXPECT_THAT(Problems("- common\n- up\n"),
              ElementsAre(HasSubstr("(top level): must be a mapping of "
                                    "sections (common, broker, "
                                    "graph_manager, solver_worker, up, "
                                    "policy), got a sequence")));
  EXPECT_THAT(Problems("just words"),
              ElementsAre(HasSubstr("(top level): must be a mapping")));
  EXPECT_THAT(Problems("up: {}\n---\nup: {}\n"),
              ElementsAre(HasSubstr("holds 2 YAML documents")));
}

TEST(ConfigParserTest, SyntaxErrorHasLineAndColumn) {
  const auto problems = CheckConfig("common:\n  data_dir: [a,\nup: {\n");
  ASSERT_THAT(problems, SizeIs(1));
  EXPECT_EQ(problems[0].path, "(yaml)");
  EXPECT_THAT(problems[0].why, HasSubstr("syntax error at column "));
  EXPECT_GT(problems[0].line, 1);
}

TEST(ConfigParserTest, ReportsEveryProblemAtOnceAndKeepsTheGoodFields) {
  Config config;
  const auto problems = CheckConfig(R"(
common:
  data_dir: /srv/flowsched
  log_level: loud
graph_manager:
  max_batch: 0
  round_timeout_ms: 20000
  cut_at_ticks: maybe
solver_worker:
  algorithm: foo
bogus: 1
)",
                                    &config);
  EXPECT_THAT(problems, SizeIs(5));
  EXPECT_EQ(config.common.data_dir, "/srv/flowsched");
  EXPECT_EQ(config.graph_manager.round_timeout_ms, 20000);
  EXPECT_EQ(config.common.log_level, "info");  // refused: the default
  EXPECT_THAT(ParseConfig("up: {solver_workers: x}\npolicy: {name: y}\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "up.solver_workers: must be an integer in [0, 16], "
                       "got \"x\" (line 1)\npolicy.name: unknown \"y\""));
}

TEST(ConfigParserTest, ReadingAFileThatIsNotThereOrADirectoryFails) {
  EXPECT_THAT(ReadConfigFile("/nonexistent/flowsched.yaml"),
              StatusIs(absl::StatusCode::kNotFound, "cannot read"));
  EXPECT_THAT(ReadConfigFile("/"),
              StatusIs(absl::StatusCode::kInvalidArgument, "is a directory"));
}

TEST(ConfigParserTest, EmittedConfigReadsBackTheSame) {
  Config config;
  EXPECT_THAT(CheckConfig(EmitConfig(config)), IsEmpty());
  EXPECT_EQ(*ParseConfig(EmitConfig(config)), config);

  config.common.brokers = "a:1,b:2";
  config.common.topic_prefix = "true";  // a string that looks like a bool
  config.common.kafka = {{"acks", "all"}, {"linger.ms", "5"}, {"x", ""}};
  config.common.legacy_broker = true;
  config.common.log_level = "debug";
  config.graph_manager.cut_every_events = 9'000'000'000;
  config.graph_manager.ha = true;
  config.solver_worker.algorithm = "ssp";
  config.up.solver_workers = 3;
  config.policy.name = "cpu-memory";
  const std::string yaml = EmitConfig(config);
  EXPECT_THAT(CheckConfig(yaml), IsEmpty()) << yaml;
  auto parsed = ParseConfig(yaml);
  ASSERT_THAT(parsed, IsOk()) << yaml;
  EXPECT_EQ(*parsed, config) << yaml;
}

}  // namespace
}  // namespace flowsched::config
