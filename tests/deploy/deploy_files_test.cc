// Checks every production deploy file against the code it drives: see
// CMakeLists.txt. FLOWSCHED_BINARY is the built CLI, FLOWSCHED_SOURCE_DIR
// the source tree.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/bus/topics.h"
#include "tests/common/shell_command.h"
#include "tools/flowsched/config/config_parser.h"
#include "yaml-cpp/yaml.h"

namespace flowsched {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

const fs::path kDeploy = fs::path(FLOWSCHED_SOURCE_DIR) / "deploy";

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

using Output = ::flowsched::testing::ShellOutput;
Output Shell(const std::string& command) {
  return ::flowsched::testing::RunShell(command);
}

std::string Quote(const std::string& word) {
  return absl::StrCat("'", word, "'");
}

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/flowsched-deploy-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] fs::path Write(const std::string& name,
                               const std::string& text) const {
    const fs::path file = path_ / name;
    std::ofstream(file) << text;
    return file;
  }
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::vector<fs::path> ManifestFiles() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kDeploy / "kubernetes")) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<YAML::Node> Manifests() {
  std::vector<YAML::Node> documents;
  for (const fs::path& file : ManifestFiles()) {
    for (const YAML::Node& document : YAML::LoadAllFromFile(file.string())) {
      if (!document.IsNull()) documents.push_back(document);
    }
  }
  return documents;
}

YAML::Node FindManifest(const std::string& kind) {
  for (const YAML::Node& document : Manifests()) {
    if (document["kind"].as<std::string>() == kind) return document;
  }
  ADD_FAILURE() << "no " << kind << " in deploy/kubernetes";
  return YAML::Node();
}

// command + args of every container of every workload.
std::vector<std::vector<std::string>> ContainerCommandLines() {
  std::vector<std::vector<std::string>> lines;
  for (const YAML::Node& document : Manifests()) {
    if (!document["spec"] || !document["spec"]["template"]) continue;
    const YAML::Node pod = document["spec"]["template"]["spec"];
    for (const YAML::Node& container : pod["containers"]) {
      std::vector<std::string> line;
      for (const char* part : {"command", "args"}) {
        for (const YAML::Node& word : container[part]) {
          line.push_back(word.as<std::string>());
        }
      }
      lines.push_back(line);
    }
  }
  return lines;
}

using IniFile = std::map<std::string, std::map<std::string, std::string>>;

// A systemd unit as INI: every line a comment, blank, [Section] or
// Key=Value; a key repeated in a section keeps its last value.
IniFile ParseUnit(const fs::path& path) {
  IniFile ini;
  std::string section;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(Slurp(path), '\n')) {
    ++number;
    if (line.empty()) continue;
    if (line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[') {
      EXPECT_EQ(line.back(), ']') << path << ":" << number;
      section = std::string(line.substr(1, line.size() - 2));
      ini[section];
      continue;
    }
    const size_t eq = line.find('=');
    EXPECT_NE(eq, absl::string_view::npos)
        << path << ":" << number << " is not Key=Value: " << line;
    EXPECT_FALSE(section.empty()) << path << ":" << number;
    if (eq == absl::string_view::npos) continue;
    ini[section][std::string(line.substr(0, eq))] =
        std::string(line.substr(eq + 1));
  }
  return ini;
}

std::vector<fs::path> UnitFiles() {
  return {kDeploy / "systemd" / "flowsched-graph-manager.service",
          kDeploy / "systemd" / "flowsched-solver-worker@.service"};
}

std::vector<std::vector<std::string>> UnitCommandLines() {
  std::vector<std::vector<std::string>> lines;
  for (const fs::path& unit : UnitFiles()) {
    std::vector<std::string> words = absl::StrSplit(
        ParseUnit(unit)["Service"]["ExecStart"], ' ', absl::SkipEmpty());
    lines.push_back(std::move(words));
  }
  return lines;
}

// --help of the root and of the subcommand: the flags the command takes.
std::string HelpOf(const std::string& command) {
  const Output root = Shell(absl::StrCat(FLOWSCHED_BINARY, " --help"));
  const Output sub =
      Shell(absl::StrCat(FLOWSCHED_BINARY, " ", command, " --help"));
  EXPECT_EQ(sub.exit_code, 0) << command << ": " << sub.text;
  return root.text + sub.text;
}

void ExpectFlagsExist(const std::vector<std::string>& line) {
  ASSERT_GE(line.size(), 2u);
  EXPECT_TRUE(absl::EndsWith(line[0], "/flowsched")) << line[0];
  const std::string& command = line[1];
  const std::string help = HelpOf(command);
  for (const std::string& word : line) {
    if (!absl::StartsWith(word, "--")) continue;
    const std::string flag = word.substr(0, word.find('='));
    EXPECT_THAT(help, HasSubstr(flag + " "))
        << "`flowsched " << command << "` has no " << flag;
  }
}

TEST(DeployFilesTest, ExampleConfigPassesConfigCheck) {
  const fs::path example = kDeploy / "flowsched.example.yaml";
  EXPECT_THAT(config::CheckConfig(Slurp(example)), IsEmpty());
  const Output check = Shell(absl::StrCat(FLOWSCHED_BINARY, " config check ",
                                          Quote(example.string())));
  EXPECT_EQ(check.exit_code, 0) << check.text;
  EXPECT_EQ(check.text, "ok\n");
}

TEST(DeployFilesTest, ConfigShowOutputPassesCheckAndKeepsTheFile) {
  const fs::path example = kDeploy / "flowsched.example.yaml";
  const Output show = Shell(absl::StrCat(FLOWSCHED_BINARY, " config show ",
                                         "--config ", Quote(example.string())));
  ASSERT_EQ(show.exit_code, 0) << show.text;
  TempDir dir;
  const fs::path shown = dir.Write("shown.yaml", show.text);
  const Output check =
      Shell(absl::StrCat(FLOWSCHED_BINARY, " config check ", Quote(shown)));
  EXPECT_EQ(check.exit_code, 0) << check.text << "\n" << show.text;
  EXPECT_EQ(*config::ParseConfig(show.text),
            *config::ParseConfig(Slurp(example)));
}

TEST(DeployFilesTest, ConfigShowAppliesDefaultsThenFileThenFlags) {
  TempDir dir;
  const fs::path file =
      dir.Write("c.yaml",
                "common: {data_dir: /from/file}\n"
                "graph_manager: {max_batch: 10, round_timeout_ms: 20000}\n");
  const Output show = Shell(
      absl::StrCat(FLOWSCHED_BINARY, " config show --config ", Quote(file),
                   " --round-timeout-ms 999 --standby --log-level debug"));
  ASSERT_EQ(show.exit_code, 0) << show.text;
  auto shown = config::ParseConfig(show.text);
  ASSERT_TRUE(shown.ok()) << shown.status() << "\n" << show.text;
  config::Config expected;                        // defaults
  expected.common.data_dir = "/from/file";        // file
  expected.graph_manager.max_batch = 10;          // file
  expected.graph_manager.round_timeout_ms = 999;  // flag over file
  expected.solver_worker.standby = true;          // flag
  expected.common.log_level = "debug";            // common flag
  EXPECT_EQ(*shown, expected) << show.text;
}

TEST(DeployFilesTest, ConfigCheckPrintsEveryProblemAndFails) {
  TempDir dir;
  const fs::path file = dir.Write("bad.yaml",
                                  "graph_manager:\n"
                                  "  cut_every_events: abc\n"
                                  "  max_bach: 3\n"
                                  "solver_worker: {algorithm: foo}\n");
  const Output check =
      Shell(absl::StrCat(FLOWSCHED_BINARY, " config check ", Quote(file)));
  EXPECT_EQ(check.exit_code, 1);
  const std::vector<std::string> lines =
      absl::StrSplit(absl::StripSuffix(check.text, "\n"), '\n');
  ASSERT_EQ(lines.size(), 3u) << check.text;
  EXPECT_EQ(lines[0],
            "graph_manager.cut_every_events: must be a non-negative integer, "
            "got \"abc\" (line 2)");
  EXPECT_EQ(lines[1],
            "graph_manager.max_bach: unknown field; did you mean max_batch? "
            "(line 3)");
  EXPECT_THAT(lines[2], HasSubstr("solver_worker.algorithm: unknown \"foo\""));
}

TEST(DeployFilesTest, ServicesRefuseABadConfigFileBeforeStarting) {
  TempDir dir;
  const fs::path file = dir.Write("bad.yaml", "graph_manager: {ha: maybe}\n");
  const Output run = Shell(absl::StrCat(FLOWSCHED_BINARY, " graph-manager ",
                                        "--config ", Quote(file)));
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.text,
              HasSubstr("graph_manager.ha: must be true or false, got "
                        "\"maybe\""));
}

TEST(DeployFilesTest, KubernetesManifestsParseAndCarryWhatTheyMust) {
  ASSERT_FALSE(ManifestFiles().empty());
  for (const YAML::Node& document : Manifests()) {
    ASSERT_TRUE(document.IsMap());
    EXPECT_TRUE(document["apiVersion"].IsScalar());
    EXPECT_TRUE(document["kind"].IsScalar());
    EXPECT_TRUE(document["metadata"]["name"].IsScalar());
  }
  const YAML::Node manager = FindManifest("StatefulSet");
  EXPECT_EQ(manager["spec"]["replicas"].as<int>(), 2);
  EXPECT_EQ(manager["spec"]["volumeClaimTemplates"].size(), 1u);
  const YAML::Node workers = FindManifest("Deployment");
  std::map<std::string, std::vector<std::string>> args;
  for (const YAML::Node& workload : {manager, workers}) {
    const YAML::Node container =
        workload["spec"]["template"]["spec"]["containers"][0];
    std::vector<std::string> words;
    for (const YAML::Node& word : container["args"]) {
      words.push_back(word.as<std::string>());
    }
    args[words.at(0)] = words;
  }
  EXPECT_THAT(args["graph-manager"], ::testing::Contains("--ha"));
  EXPECT_THAT(args["solver-worker"], ::testing::Contains("--standby"));
  bool metrics_service = false;
  for (const YAML::Node& document : Manifests()) {
    if (document["kind"].as<std::string>() != "Service") continue;
    for (const YAML::Node& port : document["spec"]["ports"]) {
      if (port["name"].as<std::string>() == "metrics" &&
          port["port"].as<int>() == 9464) {
        metrics_service = true;
      }
    }
  }
  EXPECT_TRUE(metrics_service);
}

TEST(DeployFilesTest, ConfigMapConfigPassesConfigCheck) {
  const YAML::Node map = FindManifest("ConfigMap");
  const std::string yaml = map["data"]["flowsched.yaml"].as<std::string>();
  EXPECT_THAT(config::CheckConfig(yaml), IsEmpty());
  TempDir dir;
  const Output check = Shell(absl::StrCat(FLOWSCHED_BINARY, " config check ",
                                          Quote(dir.Write("cm.yaml", yaml))));
  EXPECT_EQ(check.exit_code, 0) << check.text;
  EXPECT_FALSE(config::ParseConfig(yaml)->common.brokers.empty())
      << "production talks to a real Kafka cluster";
}

TEST(DeployFilesTest, EveryFlagOfTheDeployFilesExists) {
  auto lines = ContainerCommandLines();
  ASSERT_EQ(lines.size(), 2u);
  for (auto& line : UnitCommandLines()) lines.push_back(line);
  for (const auto& line : lines) {
    SCOPED_TRACE(absl::StrJoin(line, " "));
    ExpectFlagsExist(line);
    EXPECT_THAT(line, ::testing::Contains("--config"));
  }
}

TEST(DeployFilesTest, SystemdUnitsHaveTheRequiredKeys) {
  for (const fs::path& unit : UnitFiles()) {
    SCOPED_TRACE(unit.string());
    IniFile ini = ParseUnit(unit);
    EXPECT_FALSE(ini["Unit"]["Description"].empty());
    EXPECT_EQ(ini["Install"]["WantedBy"], "multi-user.target");
    auto& service = ini["Service"];
    EXPECT_THAT(service["ExecStart"],
                HasSubstr(" --config /etc/flowsched/flowsched.yaml"));
    EXPECT_THAT(service["ExecStart"],
                HasSubstr(" --data-dir /var/lib/flowsched/"));
    EXPECT_EQ(service["Restart"], "always");
    EXPECT_EQ(service["User"], "flowsched");
    EXPECT_EQ(service["Group"], "flowsched");
    EXPECT_TRUE(absl::StartsWith(service["StateDirectory"], "flowsched/"));
    EXPECT_EQ(service["NoNewPrivileges"], "yes");
    EXPECT_EQ(service["ProtectSystem"], "strict");
    EXPECT_EQ(service["ProtectHome"], "yes");
    EXPECT_EQ(service["PrivateTmp"], "yes");
    EXPECT_EQ(service["CapabilityBoundingSet"], "");
  }
  // The unit's user comes from sysusers.d.
  EXPECT_THAT(Slurp(kDeploy / "systemd" / "flowsched.sysusers.conf"),
              HasSubstr("\nu flowsched - "));
}

TEST(DeployFilesTest, SystemdAnalyzeVerifiesTheUnits) {
  if (Shell("command -v systemd-analyze").exit_code != 0) {
    GTEST_SKIP() << "no systemd-analyze";
  }
  TempDir dir;
  for (const fs::path& unit : UnitFiles()) {
    std::string text = Slurp(unit);
    // verify wants the executable to exist: point it at the build's.
    const std::string installed = "/usr/local/bin/flowsched";
    text.replace(text.find(installed), installed.size(), FLOWSCHED_BINARY);
    std::string name = unit.filename().string();
    if (absl::StrContains(name, "@.")) {
      name.replace(name.find("@."), 2, "@1.");  // an instance of the template
    }
    const Output verify = Shell(absl::StrCat(
        "cd ", Quote(dir.path()), " && systemd-analyze verify --man=no ",
        Quote(dir.Write(name, text))));
    // Lines about the unit itself; the host's other units are not ours.
    for (absl::string_view line : absl::StrSplit(verify.text, '\n')) {
      if (absl::StrContains(line, name)) ADD_FAILURE() << line;
    }
  }
}

// A kafka-topics.sh that records its arguments, one call per line, and
// describes a created topic with the partitions it was created with
// (WRONG_PARTITIONS overrides them).
std::string FakeKafkaTopics(const fs::path& log) {
  return absl::StrCat(R"(#!/usr/bin/env bash
echo "$*" >> )",
                      Quote(log.string()), R"(
topic=""; partitions=""; describe=0
while [ $# -gt 0 ]; do
  case "$1" in
    --topic) topic=$2; shift ;;
    --partitions) partitions=$2; shift ;;
    --describe) describe=1 ;;
  esac
  shift
done
if [ $describe = 1 ]; then
  n=$(grep -- "--topic $topic --partitions" )",
                      Quote(log.string()),
                      R"( | sed 's/.*--partitions \([0-9]*\).*/\1/' | head -n 1)
  echo "Topic:$topic	PartitionCount:${WRONG_PARTITIONS:-$n}	ReplicationFactor:3	Configs:"
fi
)");
}

TEST(DeployFilesTest, CreateTopicsCreatesExactlyTheTopicsOfTheCode) {
  const fs::path script = kDeploy / "create-topics.sh";
  EXPECT_EQ(Shell(absl::StrCat("bash -n ", Quote(script))).exit_code, 0);
  TempDir dir;
  const fs::path log = dir.path() / "calls";
  const fs::path fake = dir.Write("kafka-topics.sh", FakeKafkaTopics(log));
  fs::permissions(fake, fs::perms::owner_all);
  const Output run = Shell(absl::StrCat(
      "KAFKA_TOPICS=", Quote(fake), " FLOWSCHED_TOPIC_PREFIX=test. ", "bash ",
      Quote(script), " --bootstrap-server kafka:9092"));
  ASSERT_EQ(run.exit_code, 0) << run.text;

  std::map<std::string, int> created;
  std::map<std::string, std::string> calls;
  for (absl::string_view call :
       absl::StrSplit(Slurp(log), '\n', absl::SkipEmpty())) {
    if (!absl::StrContains(call, "--create")) continue;
    EXPECT_THAT(std::string(call), HasSubstr("--bootstrap-server kafka:9092 "));
    const std::vector<std::string> words = absl::StrSplit(call, ' ');
    std::string topic;
    int partitions = 0;
    for (size_t i = 0; i + 1 < words.size(); ++i) {
      if (words[i] == "--topic") topic = words[i + 1];
      if (words[i] == "--partitions") partitions = std::stoi(words[i + 1]);
    }
    EXPECT_EQ(created.count(topic), 0u) << topic << " created twice";
    created[topic] = partitions;
    calls[topic] = std::string(call);
  }
  std::map<std::string, int> expected;
  const bus::TopicNames names = bus::TopicNames::WithPrefix("test.");
  for (const bus::TopicSpec& spec : bus::DefaultTopicSpecs(names)) {
    expected[spec.name] = spec.partitions;
  }
  EXPECT_EQ(created, expected);
  // The rebuild replays events and ledger from offset 0; the graph manager
  // resumes placements from stored offsets: all kept forever, uncompacted.
  for (const std::string& topic :
       {names.events, names.ledger, names.placements}) {
    for (const char* setting :
         {"--config retention.ms=-1", "--config retention.bytes=-1",
          "--config cleanup.policy=delete"}) {
      EXPECT_THAT(calls[topic], HasSubstr(setting)) << topic;
    }
  }
  for (const auto& [topic, call] : calls) {
    EXPECT_THAT(call, Not(HasSubstr("cleanup.policy=compact"))) << topic;
  }
}

TEST(DeployFilesTest, CreateTopicsRefusesAnExistingTopicOfOtherPartitions) {
  const fs::path script = kDeploy / "create-topics.sh";
  TempDir dir;
  const fs::path fake =
      dir.Write("kafka-topics.sh", FakeKafkaTopics(dir.path() / "calls"));
  fs::permissions(fake, fs::perms::owner_all);
  const Output run =
      Shell(absl::StrCat("WRONG_PARTITIONS=7 KAFKA_TOPICS=", Quote(fake),
                         " KAFKA_ZOOKEEPER=zk:2181 ", "bash ", Quote(script)));
  EXPECT_EQ(run.exit_code, 1) << run.text;
  EXPECT_THAT(run.text, HasSubstr("flowsched.events has 7 partitions; "
                                  "flowsched needs 4"));
  const Output missing = Shell(absl::StrCat("bash ", Quote(script)));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.text,
              HasSubstr("give --bootstrap-server or --zookeeper"));
}

}  // namespace
}  // namespace flowsched
