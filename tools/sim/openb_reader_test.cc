#include "tools/sim/openb_reader.h"

#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"

namespace flowsched::sim {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kPodHeader[] =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n";

absl::StatusOr<std::vector<OpenbPod>> Pods(
    const std::string& rows, const std::string& header = kPodHeader) {
  std::istringstream in(header + rows);
  return ReadOpenbPods(in, "pods.csv");
}

TEST(OpenbReaderTest, NodesBecomeMachinesWithDevices) {
  std::istringstream in(
      "sn,cpu_milli,memory_mib,gpu,model\r\n"
      "openb-node-0000,64000,262144,2,P100\r\n"
      "openb-node-0001,32000,131072,0,\r\n");
  auto nodes = ReadOpenbNodes(in, "nodes.csv");
  ASSERT_THAT(nodes, IsOk());
  ASSERT_EQ(nodes->size(), 2u);
  const cluster::MachineAdded added = ToMachineAdded((*nodes)[0], MachineId(7));
  EXPECT_EQ(added.machine, MachineId(7));
  EXPECT_EQ(added.capacity.cpu_millis, 64000);
  EXPECT_EQ(added.capacity.memory_bytes, int64_t{262144} << 20);
  ASSERT_EQ(added.accelerators.size(), 1u);
  EXPECT_EQ(added.accelerators[0].count, 2u);
  EXPECT_EQ(added.accelerators[0].model, "P100");
  EXPECT_EQ(added.accelerators[0].milli_per_device, 1000);
  EXPECT_TRUE(ToMachineAdded((*nodes)[1], MachineId(8)).accelerators.empty());
}

TEST(OpenbReaderTest, EveryPodListVariantLoads) {
  // gpushare / multigpu / gpuspec / cpu-only rows, columns in another
  // order and an extra column: found by name.
  auto pods = Pods(
      "p-share,8000,30517,1,460,,LS,Running,0,100,0\n"
      "p-multi,64000,200000,8,1000,,BE,Pending,5,10,\n"
      "p-spec,4000,16384,1,1000,V100M16|V100M32,LS,Running,0,1,0\n"
      "p-cpu,2000,4096,0,0,,BE,Succeeded,0,1,0\n");
  ASSERT_THAT(pods, IsOk());
  ASSERT_EQ(pods->size(), 4u);
  const cluster::TaskSpec share = ToTaskSpec((*pods)[0], TaskId(1));
  EXPECT_EQ(share.accelerator.milli, 460);
  EXPECT_EQ(share.accelerator.whole, 0u);
  EXPECT_EQ(share.request.memory_bytes, int64_t{30517} << 20);
  const cluster::TaskSpec multi = ToTaskSpec((*pods)[1], TaskId(2));
  EXPECT_EQ(multi.accelerator.whole, 8u);
  EXPECT_EQ((*pods)[1].scheduled_time, -1);
  const cluster::TaskSpec spec = ToTaskSpec((*pods)[2], TaskId(3));
  EXPECT_EQ(spec.accelerator.whole, 1u);
  EXPECT_EQ(spec.accelerator.models,
            (std::vector<std::string>{"V100M16", "V100M32"}));
  EXPECT_TRUE(ToTaskSpec((*pods)[3], TaskId(4)).accelerator.empty());

  auto reordered = Pods("1,1000,p,0,1000,2048,x\n",
                        "num_gpu,gpu_milli,name,cpu_milli,cpu_milli_extra,"
                        "memory_mib,gpu_spec\n");
  ASSERT_THAT(reordered, IsOk());
  EXPECT_EQ((*reordered)[0].name, "p");
  EXPECT_EQ((*reordered)[0].memory_mib, 2048);
  EXPECT_EQ((*reordered)[0].gpu_spec, std::vector<std::string>{"x"});
}

TEST(OpenbReaderTest, EachBadRowIsAnErrorWithItsLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"p,-1,1,0,0,,LS,Running,0,1,0\n",
       "pods.csv:2: cpu_milli -1 is negative"},
      {"p,x,1,0,0,,LS,Running,0,1,0\n", "pods.csv:2: cpu_milli 'x' is not"},
      {"p,1,1,2,500,,LS,Running,0,1,0\n", "a fraction (gpu_milli 500) of 2"},
      {"p,1,1,1,1001,,LS,Running,0,1,0\n", "gpu_milli 1001 is above 1000"},
      {"p,1,1,1,0,,LS,Running,0,1,0\n", "num_gpu 1 with gpu_milli 0"},
      {"p,1,1,0,10,,LS,Running,0,1,0\n", "gpu_milli 10 with num_gpu 0"},
      {"p,1,1,1,100,A||B,LS,Running,0,1,0\n", "empty model in 'A||B'"},
      {"p,1,1,1,100,,LS,Running,0,1\n", "10 columns, the header has 11"},
      {"p,1,1,0,0,,LS,Running,0,1,0\np,1,1,0,0,,LS,Running,0,1,0\n",
       "pods.csv:3: duplicate name 'p'"},
      {"p,1,1,0,0,,LS,Running,x,1,0\n", "creation_time 'x' is not"},
      {"p,1,1,65,1000,,LS,Running,0,1,0\n", "num_gpu 65 is more than 64"},
  };
  for (const auto& [rows, why] : cases) {
    EXPECT_THAT(Pods(rows), StatusIs(absl::StatusCode::kInvalidArgument, why))
        << rows;
  }
  // Every bad row is reported, not just the first.
  auto both = Pods(
      "a,-1,1,0,0,,LS,R,0,1,0\nb,1,1,0,0,,LS,R,0,1,0\n"
      "c,1,1,1,0,,LS,R,0,1,0\n");
  EXPECT_THAT(both, StatusIs(absl::StatusCode::kInvalidArgument, "2 bad rows"));
  EXPECT_THAT(both.status().message(), HasSubstr("pods.csv:4:"));
}

TEST(OpenbReaderTest, HeaderAndNodeErrors) {
  EXPECT_THAT(Pods("", ""),
              StatusIs(absl::StatusCode::kInvalidArgument, "empty file"));
  EXPECT_THAT(
      Pods("", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"),
      StatusIs(absl::StatusCode::kInvalidArgument, "no column 'gpu_spec'"));
  std::istringstream in(
      "sn,cpu_milli,memory_mib,gpu,model\n"
      "n0,1,1,2,\n"
      "n1,1,1,65,G\n"
      "n1,1,-1,0,\n");
  auto nodes = ReadOpenbNodes(in, "nodes.csv");
  ASSERT_FALSE(nodes.ok());
  EXPECT_THAT(nodes.status().message(),
              HasSubstr("nodes.csv:2: gpu without a model"));
  EXPECT_THAT(nodes.status().message(),
              HasSubstr("nodes.csv:3: gpu 65 is more than 64"));
  EXPECT_THAT(nodes.status().message(),
              HasSubstr("nodes.csv:4: duplicate name 'n1'"));
  EXPECT_THAT(ReadOpenbNodeFile("/nonexistent/nodes.csv"),
              StatusIs(absl::StatusCode::kNotFound, ""));
}

}  // namespace
}  // namespace flowsched::sim
