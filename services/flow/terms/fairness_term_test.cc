#include "services/flow/terms/fairness_term.h"

#include <cstdint>
#include <map>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/cluster/cluster_event.h"
#include "services/common/status_matchers.h"

namespace flowsched::flow {
namespace {

using ::flowsched::testing::IsOk;

// Four one-slot machines (M = 4).
class FairnessTermTest : public ::testing::Test {
 protected:
  FairnessTermTest() {
    for (uint64_t m = 1; m <= 4; ++m) {
      Apply(cluster::MachineAdded{MachineId(m), "r", {}, 1, {}});
    }
  }
  void Apply(cluster::EventBody body) {
    ASSERT_THAT(
        state_.Apply(cluster::ClusterEvent{"e", 0, "t", body}, 0, changes_),
        IsOk());
  }
  // Job `job` with `tasks` tasks, ids job * 10 + 1, ...
  void Submit(uint64_t job, int tasks) {
    cluster::JobSubmitted submitted{JobId(job), "j", 0, {}};
    for (int t = 1; t <= tasks; ++t) {
      submitted.tasks.push_back({.id = TaskId(job * 10 + t)});
    }
    Apply(submitted);
  }
  void Place(uint64_t task, uint64_t machine) {
    ASSERT_THAT(state_.Place(TaskId(task), MachineId(machine), 0, changes_),
                IsOk());
  }
  // (E_j, F_j) by job.
  std::map<uint64_t, std::pair<int64_t, int64_t>> Bounds(
      FairnessParams params) {
    QuincyBoundsByJob bounds;
    FairnessTerm::CountJobs(state_, bounds);
    FairnessTerm(params).Derive(state_, bounds);
    std::map<uint64_t, std::pair<int64_t, int64_t>> by_job;
    for (const auto& [id, b] : bounds) {
      by_job[id.value()] = {b.min_running, b.max_running};
    }
    return by_job;
  }

  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
};

using BoundsByJob = std::map<uint64_t, std::pair<int64_t, int64_t>>;

// A_1 = min(4 / 2, 3) = 2, A_2 = min(2, 1) = 1, and the slot left over to
// the job with more tasks: A_1 = 3. QFP: E = F = A. QP with N <= M: E = F
// = N; with N > M: E = 1, F = N.
TEST_F(FairnessTermTest, FairSharesAndTheUnfairBounds) {
  Submit(1, 3);
  Submit(2, 1);
  EXPECT_EQ(Bounds({.fair = true, .preemptive = true}),
            (BoundsByJob{{1, {3, 3}}, {2, {1, 1}}}));
  EXPECT_EQ(Bounds({.fair = false, .preemptive = true}),
            (BoundsByJob{{1, {3, 3}}, {2, {1, 1}}}));
  Submit(3, 2);
  EXPECT_EQ(Bounds({.fair = false, .preemptive = true}),
            (BoundsByJob{{1, {1, 3}}, {2, {1, 1}}, {3, {1, 2}}}));
  // Admitting one job: it gets the cluster, the others nothing.
  EXPECT_EQ(Bounds({.fair = true, .preemptive = true, .admission_limit = 1}),
            (BoundsByJob{{1, {3, 3}}, {2, {0, 0}}, {3, {0, 0}}}));
}

// QF: job 1 runs 3 while its share is 2, and keeps them; job 2's share is
// cut to what is left (A_2 = 2 - 1). Without preemption F_j covers what a
// job runs.
TEST_F(FairnessTermTest, WithoutPreemptionAJobKeepsWhatItRuns) {
  Submit(1, 3);
  for (uint64_t t = 1; t <= 3; ++t) Place(10 + t, t);
  Submit(2, 3);
  EXPECT_EQ(Bounds({.fair = true, .preemptive = false}),
            (BoundsByJob{{1, {3, 3}}, {2, {1, 1}}}));
  // Preemptive, the shares stand: job 1 must give one slot back.
  EXPECT_EQ(Bounds({.fair = true, .preemptive = true}),
            (BoundsByJob{{1, {2, 2}}, {2, {2, 2}}}));
}

// Q (unfair, no preemption) with more tasks than slots: each job runs at
// least one task and at most all of them, the running ones included, and
// the new placements the lower bounds ask (job 4's one) fit the free slot.
TEST_F(FairnessTermTest, UnfairWithoutPreemptionBoundsEachJobByOneAndAll) {
  Submit(1, 1);
  Submit(2, 1);
  Submit(3, 2);
  Place(11, 1);
  Place(21, 2);
  Place(31, 3);
  Submit(4, 1);
  EXPECT_EQ(Bounds({.fair = false, .preemptive = false}),
            (BoundsByJob{{1, {1, 1}}, {2, {1, 1}}, {3, {1, 2}}, {4, {1, 1}}}));
}

}  // namespace
}  // namespace flowsched::flow
