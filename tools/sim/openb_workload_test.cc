#include "tools/sim/openb_workload.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace flowsched::sim {
namespace {

using ::testing::HasSubstr;

OpenbPod Pod(std::string name, int64_t cpu, int64_t memory, int64_t created,
             int64_t scheduled, int64_t deleted) {
  OpenbPod pod;
  pod.name = std::move(name);
  pod.cpu_milli = cpu;
  pod.memory_mib = memory;
  pod.creation_time = created;
  pod.scheduled_time = scheduled;
  pod.deletion_time = deleted;
  return pod;
}

// Three nodes in racks of two, sizes over the largest node's; pods by
// arrival, a pod never scheduled dropped, runtimes from scheduling to
// deletion (forever if never deleted), a GPU ask counted and left out.
TEST(OpenbWorkloadTest, NodesAndPodsBecomeMachinesAndTasks) {
  const std::vector<OpenbNode> nodes = {{"n0", 64000, 262144, 0, ""},
                                        {"n1", 32000, 131072, 2, "T4"},
                                        {"n2", 16000, 524288, 0, ""}};
  std::vector<OpenbPod> pods = {
      Pod("p0", 8000, 65536, 30, 31, 91), Pod("p1", 16000, 1024, 0, 0, 100),
      Pod("p2", 1000, 1024, 10, -1, 20), Pod("p3", 2000, 2048, 30, 40, 40),
      Pod("p4", 1000, 1024, 50, 60, -1)};
  pods[3].num_gpu = 1;
  pods[3].gpu_milli = 500;
  OpenbWorkloadStats stats;
  absl::StatusOr<Workload> workload =
      BuildOpenbWorkload(nodes, pods, /*machines_per_rack=*/2,
                         /*pods_stay=*/false, stats);
  ASSERT_TRUE(workload.ok()) << workload.status();
  ASSERT_EQ(workload->machines.size(), 3u);
  EXPECT_EQ(workload->machines[0].rack, "r0");
  EXPECT_EQ(workload->machines[1].rack, "r0");
  EXPECT_EQ(workload->machines[2].rack, "r1");
  EXPECT_DOUBLE_EQ(workload->machines[1].cpu, 0.5);
  EXPECT_DOUBLE_EQ(workload->machines[0].memory, 0.5);
  EXPECT_DOUBLE_EQ(workload->machines[2].memory, 1.0);
  EXPECT_EQ(workload->machines[2].remove_us, kForever);

  ASSERT_EQ(workload->tasks.size(), 4u);
  const SimTask& first = workload->tasks[0];  // p1, present at 0
  EXPECT_EQ(first.task_id, 2u);
  EXPECT_EQ(first.submit_us, 0);
  EXPECT_EQ(first.duration_us, 100'000'000);
  EXPECT_DOUBLE_EQ(first.cpu, 0.25);
  const SimTask& second = workload->tasks[1];  // p0
  EXPECT_EQ(second.task_id, 1u);
  EXPECT_EQ(second.submit_us, 30'000'000);
  EXPECT_EQ(second.duration_us, 60'000'000);
  EXPECT_DOUBLE_EQ(second.memory, 0.125);
  EXPECT_NE(second.job_id, first.job_id);
  EXPECT_EQ(workload->tasks[2].task_id, 4u);  // p3, same arrival, later id
  EXPECT_EQ(workload->tasks[2].duration_us, 0);
  EXPECT_EQ(workload->tasks[3].task_id, 5u);  // p4, never deleted
  EXPECT_EQ(workload->tasks[3].duration_us, kForever);

  EXPECT_EQ(stats.pods, 5u);
  EXPECT_EQ(stats.never_scheduled, 1u);
  EXPECT_EQ(stats.gpu_asks_left_out, 1u);

  // Pods that stay never finish; nothing else changes.
  absl::StatusOr<Workload> staying =
      BuildOpenbWorkload(nodes, pods, 2, /*pods_stay=*/true, stats);
  ASSERT_TRUE(staying.ok()) << staying.status();
  ASSERT_EQ(staying->tasks.size(), 4u);
  for (const SimTask& task : staying->tasks) {
    EXPECT_EQ(task.duration_us, kForever) << task.task_id;
  }
  EXPECT_EQ(staying->tasks[1].submit_us, 30'000'000);
  EXPECT_EQ(stats.pods, 5u);
  EXPECT_EQ(stats.never_scheduled, 1u);
}

TEST(OpenbWorkloadTest, RefusesWhatItCannotMeasure) {
  OpenbWorkloadStats stats;
  const std::vector<OpenbNode> nodes = {{"n0", 64000, 262144, 0, ""}};
  EXPECT_THAT(BuildOpenbWorkload({}, {}, 2, false, stats).status().message(),
              HasSubstr("no nodes"));
  EXPECT_THAT(BuildOpenbWorkload(nodes, {}, 0, false, stats).status().message(),
              HasSubstr("machines per rack"));
  EXPECT_THAT(BuildOpenbWorkload({{"n9", 0, 1024, 0, ""}}, {}, 2, false, stats)
                  .status()
                  .message(),
              HasSubstr("node n9 reports no CPU or no memory"));
  EXPECT_THAT(BuildOpenbWorkload(nodes, {Pod("late", 1000, 1024, 50, 40, 60)},
                                 2, false, stats)
                  .status()
                  .message(),
              HasSubstr("pod late has times out of order or past 4294967296 s "
                        "(created 50, scheduled 40, deleted 60)"));
  EXPECT_THAT(BuildOpenbWorkload(nodes, {Pod("back", 1000, 1024, 0, 40, 30)}, 2,
                                 false, stats)
                  .status()
                  .message(),
              HasSubstr("pod back has times out of order"));
  EXPECT_THAT(BuildOpenbWorkload(nodes, {Pod("nocreate", 1000, 1024, -1, 5, 9)},
                                 2, false, stats)
                  .status()
                  .message(),
              HasSubstr("pod nocreate was scheduled but has no creation time"));
  EXPECT_THAT(BuildOpenbWorkload(
                  nodes, {Pod("far", 1000, 1024, 0, 1, int64_t{1} << 40)}, 2,
                  false, stats)
                  .status()
                  .message(),
              HasSubstr("pod far has times out of order or past 4294967296 s"));
  EXPECT_THAT(BuildOpenbWorkload(nodes, {Pod("pending", 1000, 1024, 0, -1, 9)},
                                 2, false, stats)
                  .status()
                  .message(),
              HasSubstr("none of the 1 pods was ever scheduled"));
}

}  // namespace
}  // namespace flowsched::sim
