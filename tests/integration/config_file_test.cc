// `flowsched up --config FILE` runs the local deployment the file
// describes: data directory, policy (with a parameter) and solver workers from
// the file, and the services it starts read the same file (FLOWSCHED_CONFIG);
// `status` and `down` find it through the file too.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/shell_command.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using Output = ::flowsched::testing::ShellOutput;
Output Shell(const std::string& command) {
  return ::flowsched::testing::RunShell(command);
}

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ConfigFileTest, UpStatusAndDownTakeTheDeploymentFromTheFile) {
  char pattern[] = "/tmp/flowsched-config-XXXXXX";
  const fs::path dir = ::mkdtemp(pattern);
  const fs::path data = dir / "data";
  std::ofstream(dir / "flowsched.yaml")
      << "common: {data_dir: " << data.string() << "}\n"
      << "graph_manager: {max_batch: 100}\n"
      << "up: {solver_workers: 2}\n"
      << "policy: {name: cpu-memory, parameters: {util_scale: 2000}}\n";
  // A relative path: `up` hands its services the absolute one.
  const std::string in_dir =
      absl::StrCat("cd '", dir.string(), "' && ", FLOWSCHED_BINARY, " ");
  // Stops what `up` started also when an assertion returns early.
  struct StopAtEnd {
    std::string command;
    ~StopAtEnd() { Shell(command); }
  } stop_at_end{in_dir + "down --config flowsched.yaml"};
  const Output up = Shell(in_dir + "up --config flowsched.yaml");
  ASSERT_EQ(up.exit_code, 0) << up.text;
  EXPECT_THAT(up.text, HasSubstr(absl::StrCat("data in ", data.string())));

  Output status;
  for (int i = 0; i < 100; ++i) {  // the second worker may still be starting
    status = Shell(in_dir + "status --config flowsched.yaml");
    if (status.text.find("solver-worker-2   running") != std::string::npos) {
      break;
    }
    ::usleep(100'000);
  }
  EXPECT_EQ(status.exit_code, 0) << status.text;
  EXPECT_THAT(status.text, HasSubstr("policy cpu-memory:util_scale=2000"));
  EXPECT_THAT(status.text, HasSubstr("solver-worker-2   running"));

  const std::string pid =
      Slurp(data / "pids" / "graph-manager.pid").substr(0, 20);
  std::string environ =
      Slurp(fs::path("/proc") / std::to_string(std::stoi(pid)) / "environ");
  for (char& c : environ) {
    if (c == '\0') c = '\n';
  }
  EXPECT_THAT(environ,
              HasSubstr(absl::StrCat("FLOWSCHED_CONFIG=",
                                     (dir / "flowsched.yaml").string(), "\n")));

  const Output down = Shell(in_dir + "down --config flowsched.yaml");
  EXPECT_EQ(down.exit_code, 0) << down.text;
  EXPECT_FALSE(fs::exists(data / "pids" / "graph-manager.pid"));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
