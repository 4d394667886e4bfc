#include "tools/sim/gpu_replay.h"

#include <cmath>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"

namespace flowsched::sim {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

// A small openb-format trace, generated: 4 nodes of 8 "G2" devices and 4
// of 2 "T4"; 80 pods of every kind the trace has (fractions, 1-8 whole
// devices, CPU only, a model list).
struct SmallTrace {
  std::vector<OpenbNode> nodes;
  std::vector<OpenbPod> pods;
};

SmallTrace MakeSmallTrace() {
  std::string nodes = "sn,cpu_milli,memory_mib,gpu,model\n";
  for (int i = 0; i < 8; ++i) {
    absl::StrAppend(&nodes, "openb-node-", i, ",",
                    i < 4 ? "96000,786432,8,G2" : "64000,262144,2,T4", "\n");
  }
  std::string pods =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
      "creation_time,deletion_time,scheduled_time\n";
  for (int i = 0; i < 80; ++i) {
    std::string gpu = "1,500,";
    switch (i % 8) {
      case 0:
        gpu = i % 16 == 0 ? "1,1000," : "1,700,";
        break;
      case 1:
        gpu = absl::StrCat("1,", 100 + 37 * i % 800, ",");
        break;
      case 2:
        gpu = i % 32 == 2 ? "2,1000," : "1,300,";
        break;
      case 3:
        gpu = "0,0,";
        break;
      case 4:
        gpu = "1,250,T4|G3";
        break;
      case 5:
        gpu = absl::StrCat("1,", 300 + 11 * i % 600, ",");
        break;
      case 6:
        gpu = i == 6 ? "8,1000," : i == 38 ? "4,1000," : "1,200,";
        break;
      default:
        break;
    }
    absl::StrAppend(&pods, "openb-pod-", 1000 + (i * 37) % 80, ",",
                    4000 + 500 * (i % 5), ",", 8192 * (1 + i % 3), ",", gpu,
                    ",LS,Running,", i, ",", i + 100, ",", i, "\n");
  }
  std::istringstream node_in(nodes), pod_in(pods);
  auto read_nodes = ReadOpenbNodes(node_in, "nodes");
  auto read_pods = ReadOpenbPods(pod_in, "pods");
  EXPECT_THAT(read_nodes, IsOk());
  EXPECT_THAT(read_pods, IsOk());
  return {*read_nodes, *read_pods};
}

TEST(GpuReplayTest, OrderIsInflatedShuffledAndSeeded) {
  const SmallTrace trace = MakeSmallTrace();
  const int64_t capacity = 40'000;
  const auto order = ReplayOrder(trace.pods, capacity, 42, 1.3);
  int64_t asked = 0;
  for (size_t pod : order) asked += RequestedMilli(trace.pods[pod]);
  EXPECT_GE(asked, 1.3 * capacity);
  EXPECT_GT(order.size(), trace.pods.size());
  EXPECT_EQ(order, ReplayOrder(trace.pods, capacity, 42, 1.3));
  EXPECT_NE(order, ReplayOrder(trace.pods, capacity, 43, 1.3));
  // Above the target: pods are removed until it is met.
  const auto fewer = ReplayOrder(trace.pods, capacity, 42, 0.5);
  int64_t kept = 0;
  for (size_t pod : fewer) kept += RequestedMilli(trace.pods[pod]);
  EXPECT_LE(kept, 0.5 * capacity);
  EXPECT_LT(fewer.size(), trace.pods.size());
}

TEST(GpuReplayTest, EveryBaselineReplaysWithinCapacityAndDeterministically) {
  const SmallTrace trace = MakeSmallTrace();
  for (const char* name :
       {"random", "dot-product", "clustering", "packing", "best-fit", "fgd"}) {
    const GpuReplayOptions options{.seed = 7};
    auto result = RunGpuReplay(trace.nodes, trace.pods, name, options);
    ASSERT_THAT(result, IsOk()) << name;
    EXPECT_EQ(result->capacity_milli, 40'000);
    EXPECT_EQ(result->curve.size(), result->pods);
    EXPECT_GE(result->curve.back().arrived, 1.3) << name;
    EXPECT_LE(result->curve.back().allocated, 1.0) << name;
    // Failed pods stay failed: every pod is placed once or fails once.
    EXPECT_EQ(result->placed + result->unplaced, result->pods) << name;
    EXPECT_GT(result->unplaced, 0u) << name;  // 130% cannot all fit
    ASSERT_TRUE(result->fragmentation.has_value()) << name;
    EXPECT_LE(result->fragmentation->fragmented_milli,
              static_cast<double>(result->fragmentation->idle_milli));
    EXPECT_FALSE(std::isnan(result->UnallocatedAt(1.0))) << name;
    EXPECT_TRUE(std::isnan(result->UnallocatedAt(2.0))) << name;
    // Allocation never falls (pods never finish).
    for (size_t i = 1; i < result->curve.size(); ++i) {
      EXPECT_GE(result->curve[i].allocated, result->curve[i - 1].allocated);
    }
    auto again = RunGpuReplay(trace.nodes, trace.pods, name, options);
    ASSERT_THAT(again, IsOk());
    ASSERT_EQ(again->curve.size(), result->curve.size());
    for (size_t i = 0; i < result->curve.size(); ++i) {
      EXPECT_EQ(again->curve[i].allocated, result->curve[i].allocated) << name;
    }
  }
}

TEST(GpuReplayTest, FlowContenderKeepsUnplacedPodsWaiting) {
  const SmallTrace trace = MakeSmallTrace();
  auto result = RunGpuReplay(trace.nodes, trace.pods, "flow:cpu-memory",
                             {.seed = 7, .batch = 10});
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->curve.size(), (result->pods + 9) / 10);
  EXPECT_EQ(result->placed + result->unplaced, result->pods);
  EXPECT_GT(result->placed, 0u);
}

TEST(GpuReplayTest, BadArguments) {
  const SmallTrace trace = MakeSmallTrace();
  EXPECT_THAT(RunGpuReplay(trace.nodes, trace.pods, "nope", {}),
              StatusIs(absl::StatusCode::kInvalidArgument, "nope"));
  EXPECT_THAT(
      RunGpuReplay(trace.nodes, trace.pods, "fgd", {.batch = 0}),
      StatusIs(absl::StatusCode::kInvalidArgument, "batch must be at least 1"));
  EXPECT_THAT(
      RunGpuReplay({}, trace.pods, "fgd", {}),
      StatusIs(absl::StatusCode::kInvalidArgument, "the node list has no GPU"));
  EXPECT_THAT(
      RunGpuReplay(trace.nodes, {}, "fgd", {}),
      StatusIs(absl::StatusCode::kInvalidArgument, "the pod list has no pods"));
}

}  // namespace
}  // namespace flowsched::sim
