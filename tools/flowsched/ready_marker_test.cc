#include "tools/flowsched/ready_marker.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace flowsched::tools {
namespace {

TEST(ReadyMarkerTest, NamesThisProcessUntilDestroyed) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           absl::StrCat("flowsched-ready-test-", ::getpid()))
                              .string();
  std::filesystem::remove_all(dir);
  auto stat = ReadProcessStat(::getpid());
  ASSERT_TRUE(stat.ok());
  const PidRecord self{.pid = ::getpid(), .start_time = stat->start_time};
  const PidRecord old_file{.pid = ::getpid()};
  const PidRecord reused{.pid = ::getpid(), .start_time = stat->start_time + 1};
  EXPECT_FALSE(IsReady(dir, "solver-worker", self));
  {
    ReadyMarker marker(dir, "solver-worker");
    EXPECT_TRUE(IsReady(dir, "solver-worker", self));
    EXPECT_TRUE(IsReady(dir, "solver-worker", old_file));
    EXPECT_FALSE(IsReady(dir, "graph-manager", self));
    // A marker left by an earlier process with this pid.
    EXPECT_FALSE(IsReady(dir, "solver-worker", reused));
  }
  EXPECT_FALSE(IsReady(dir, "solver-worker", self));
  EXPECT_FALSE(std::filesystem::exists(ReadyMarkerPath(dir, ::getpid())));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace flowsched::tools
