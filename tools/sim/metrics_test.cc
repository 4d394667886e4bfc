#include "tools/sim/metrics.h"

#include <tuple>

#include "gtest/gtest.h"

namespace flowsched::sim {
namespace {

TEST(MetricsTest, NearestRankPercentiles) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  const Distribution d = Summarise(v);
  EXPECT_EQ(d.count, 100u);
  EXPECT_EQ(d.p50, 50);
  EXPECT_EQ(d.p90, 90);
  EXPECT_EQ(d.p99, 99);
  EXPECT_EQ(d.max, 100);
  EXPECT_DOUBLE_EQ(d.mean, 50.5);
  std::vector<double> one{7};
  EXPECT_EQ(Summarise(one).p50, 7);
  EXPECT_EQ(Summarise(one).p99, 7);
  std::vector<double> none;
  EXPECT_EQ(Summarise(none).count, 0u);
}

TEST(MetricsTest, CdfEndsAtOneAndIsMonotone) {
  std::vector<double> v;
  for (int i = 1; i <= 1000; ++i) v.push_back(i * 0.5);
  const auto cdf = Cdf(v, 64);
  ASSERT_FALSE(cdf.empty());
  EXPECT_LE(cdf.size(), 65u);
  EXPECT_EQ(cdf.back().first, 500.0);
  EXPECT_EQ(cdf.back().second, 1.0);
  for (size_t i = 1; i < cdf.size(); ++i) {
    EXPECT_LE(cdf[i - 1].first, cdf[i].first);
    EXPECT_LT(cdf[i - 1].second, cdf[i].second);
  }
  const auto all = Cdf({1, 2, 3}, 10);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_NEAR(all[0].second, 1.0 / 3, 1e-12);
}

TEST(MetricsTest, JainIndex) {
  EXPECT_DOUBLE_EQ(JainIndex({1, 1, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(JainIndex({1, 0, 0, 0}), 0.25);
  EXPECT_DOUBLE_EQ(JainIndex({2, 2, 0, 0}), 0.5);
  EXPECT_DOUBLE_EQ(JainIndex({}), 1.0);
}

cluster::ClusterState TwoRacks() {
  cluster::ClusterState state;
  cluster::ChangeSet c;
  for (uint64_t m = 1; m <= 4; ++m) {
    EXPECT_TRUE(state
                    .Apply({"", 0, "t",
                            cluster::MachineAdded{.machine = MachineId(m),
                                                  .rack = m <= 2 ? "a" : "b",
                                                  .task_slots = 2}},
                           0, c)
                    .ok());
  }
  return state;
}

// (local, rack, remote) bytes of `task`'s input read on `machine`.
std::tuple<int64_t, int64_t, int64_t> Split(const cluster::ClusterState& state,
                                            const cluster::Task& task,
                                            uint64_t machine) {
  const LocalityBytes b = InputLocality(state, task, MachineId(machine));
  return {b.local, b.rack, b.remote};
}

TEST(MetricsTest, InputLocalitySplitsLocalRackAndCross) {
  cluster::ClusterState state = TwoRacks();
  cluster::Task task;
  task.spec.input = {{.machine = MachineId(1), .bytes = 10},
                     {.machine = MachineId(2), .bytes = 20},
                     {.machine = MachineId(3), .bytes = 40},
                     {.rack = "a", .bytes = 35}};  // 5 on no machine listed
  task.spec.input_bytes = 100;  // 25 bytes of unknown location
  EXPECT_EQ(Split(state, task, 1), std::make_tuple(10, 25, 65));
  EXPECT_EQ(Split(state, task, 3), std::make_tuple(40, 0, 60));
}

TEST(MetricsTest, InputLocalityCountsAReplicatedBlockOncePerRack) {
  cluster::ClusterState state = TwoRacks();
  cluster::Task task;
  // One block, replicas on machine 1 (rack a) and machines 3 and 4 (b).
  task.spec.input = {{.machine = MachineId(1), .bytes = 8},
                     {.machine = MachineId(3), .bytes = 8},
                     {.machine = MachineId(4), .bytes = 8},
                     {.rack = "a", .bytes = 8},
                     {.rack = "b", .bytes = 8}};
  task.spec.input_bytes = 8;
  EXPECT_EQ(Split(state, task, 4), std::make_tuple(8, 0, 0));
  EXPECT_EQ(Split(state, task, 2), std::make_tuple(0, 8, 0));
}

TEST(MetricsTest, FairShareJainIsOneForProportionalRunning) {
  cluster::ClusterState state = TwoRacks();  // 8 slots
  cluster::ChangeSet c;
  uint64_t next = 1;
  for (uint64_t job = 1; job <= 2; ++job) {
    cluster::JobSubmitted submitted{.job = JobId(job)};
    for (int t = 0; t < 4; ++t)
      submitted.tasks.push_back({.id = TaskId(next++)});
    ASSERT_TRUE(state.Apply({"", 1, "t", submitted}, 1, c).ok());
  }
  // Job 1 runs 2 of its share of 4, job 2 runs nothing: unfair.
  ASSERT_TRUE(state.Place(TaskId(1), MachineId(1), 2, c).ok());
  ASSERT_TRUE(state.Place(TaskId(2), MachineId(1), 2, c).ok());
  EXPECT_DOUBLE_EQ(FairShareJain(state), 0.5);
  ASSERT_TRUE(state.Place(TaskId(5), MachineId(2), 2, c).ok());
  ASSERT_TRUE(state.Place(TaskId(6), MachineId(2), 2, c).ok());
  EXPECT_DOUBLE_EQ(FairShareJain(state), 1.0);
}

}  // namespace
}  // namespace flowsched::sim
