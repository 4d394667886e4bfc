// The configuration schema (tools/flowsched/config/config_schema.h) against
// the built CLI: every field's flag exists on each command the schema says
// has it, with the same range and default that `--help` shows.

#include <regex>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/common/shell_command.h"
#include "tools/flowsched/config/config_schema.h"

namespace flowsched::config {
namespace {

std::string Help(const std::string& command) {
  return ::flowsched::testing::RunShell(
             absl::StrCat(FLOWSCHED_BINARY, " ", command, " --help"))
      .text;
}

TEST(ConfigCliTest, EveryFieldIsAFlagOfItsCommandsWithItsRangeAndDefault) {
  const Config defaults;
  for (const ConfigField& field : Fields()) {
    std::vector<std::string> commands;
    if (field.IsCommon()) {
      commands.push_back("");  // root flags: `flowsched --help`
    } else {
      commands = absl::StrSplit(std::string(field.commands), ' ');
    }
    for (const std::string& command : commands) {
      SCOPED_TRACE(
          absl::StrCat(field.Path(), " in `flowsched ", command, " --help`"));
      const std::string help = Help(command);
      // "  --max-batch UINT:INT in [1 - 1000000]=5000"
      const std::regex line(
          absl::StrCat("\\n +", std::string(field.flag),
                       "( [A-Z]+(:INT in \\[(-?\\d+) - (-?\\d+)\\])?"
                       "(=(\\S+))?)?"));
      std::smatch match;
      ASSERT_TRUE(std::regex_search(help, match, line)) << help;
      if (match[3].matched) {
        const int64_t min = std::stoll(match[3]);
        const int64_t max = std::stoll(match[4]);
        EXPECT_EQ(max, field.max);
        // The file may say 0 for "as the flag's absence" (up's
        // solver_workers): then 0 is the default and never passed on.
        if (!(field.min == 0 && min == 1 &&
              FlagValues(field, defaults) == std::vector<std::string>{"0"})) {
          EXPECT_EQ(min, field.min);
        }
      }
      if (match[6].matched) {
        EXPECT_EQ(std::vector<std::string>{match[6]},
                  FlagValues(field, defaults));
      }
    }
  }
}

}  // namespace
}  // namespace flowsched::config
