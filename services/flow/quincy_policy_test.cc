#include "services/flow/quincy_policy.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/cluster/resource_fit.h"
#include "services/common/byte_units.h"
#include "services/common/status_matchers.h"
#include "services/flow/policy_test_util.h"

namespace flowsched::flow {
namespace {

using cluster::ClusterEvent;
using cluster::DataLocality;
using ::flowsched::testing::IsOk;

constexpr int64_t kSecond = 1'000'000;

// Two racks of two one-slot computers: r1 = {m1, m2}, r2 = {m3, m4}.
class QuincyPolicyTest : public ::testing::Test {
 protected:
  void Init(QuincyVariant variant) {
    policy_ = std::make_unique<QuincyPolicy>(QuincyParams::ForVariant(variant));
    for (uint64_t m = 1; m <= 4; ++m) {
      Apply(0, cluster::MachineAdded{
                   MachineId(m), m <= 2 ? "r1" : "r2", {}, 1, {}});
    }
  }
  void Apply(int64_t time_us, cluster::EventBody body) {
    ASSERT_THAT(
        state_.Apply(ClusterEvent{"e", time_us, "t", body}, time_us, changes_),
        IsOk());
  }
  void Sync(int64_t now_us) {
    ASSERT_THAT(policy_->Sync(changes_, state_, SyncContext{now_us}, builder_),
                IsOk());
    changes_.Clear();
    ASSERT_EQ(network_.total_supply(), 0);
  }
  static cluster::TaskSpec Task(uint64_t id, int64_t total_mib,
                                std::vector<DataLocality> input = {}) {
    for (DataLocality& d : input) d.bytes *= kMiB;
    return {.id = TaskId(id), .input = input, .input_bytes = total_mib * kMiB};
  }
  void Submit(int64_t time_us, uint64_t job,
              std::vector<cluster::TaskSpec> tasks) {
    Apply(time_us, cluster::JobSubmitted{JobId(job), "j", 0, std::move(tasks)});
  }
  const ArcView Arc(NodeId src, NodeId dst) {
    auto arc = network_.FindArc(src, dst);
    EXPECT_TRUE(arc.has_value()) << src << "->" << dst;
    return arc.value_or(ArcView{});
  }
  NodeId T(uint64_t id) { return builder_.FindTaskNode(TaskId(id)); }
  NodeId M(uint64_t id) { return builder_.FindMachineNode(MachineId(id)); }
  NodeId U(uint64_t id) { return builder_.FindJobNode(JobId(id)); }
  NodeId R(const char* rack) { return builder_.FindRackNode(rack); }
  flow::testing::SolvedRound Solve() {
    auto round = flow::testing::SolveNetwork(network_);
    EXPECT_THAT(round, IsOk());
    return round.ok() ? *round : flow::testing::SolvedRound{};
  }
  // A round as the graph manager runs it: Sync, Refresh, solve, apply.
  void RunRound(int64_t now_us) {
    Sync(now_us);
    ASSERT_THAT(policy_->Refresh(state_, SyncContext{now_us}, builder_),
                IsOk());
    const flow::testing::SolvedRound solved = Solve();
    ASSERT_THAT(flow::testing::ApplyRound(solved, state_, now_us, changes_),
                IsOk());
  }
  // Scheduled tasks per job after a round.
  std::map<uint64_t, int64_t> Scheduled(const flow::testing::SolvedRound& r) {
    std::map<uint64_t, int64_t> count;
    for (const auto& [id, job] : state_.jobs()) count[id.value()] = 0;
    for (const TaskPlacement& p : r.placements) {
      if (p.machine_id != 0) {
        ++count[state_.FindTask(TaskId(p.task_id))->job.value()];
      }
    }
    return count;
  }

  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
  FlowNetwork network_;
  NetworkBuilder builder_{network_};
  std::unique_ptr<QuincyPolicy> policy_;
};

// Worked by hand (psi = 1 per MiB, xi = 2 per MiB, omega = 512 per second).
// t11 reads 1000 MiB: 800 on m1, 200 on m3. t12 reads nothing. t21 reads
// 1000 MiB: 600 on m4, 400 nowhere known.
TEST_F(QuincyPolicyTest, BuildsTheAppendixGraphWithHandComputedCosts) {
  Init(QuincyVariant::kQfp);
  Submit(1 * kSecond, 1,
         {Task(11, 1000, {{MachineId(1), "", 800}, {MachineId(3), "", 200}}),
          Task(12, 0)});
  Submit(1 * kSecond, 2, {Task(21, 1000, {{MachineId(4), "", 600}})});
  Sync(11 * kSecond);

  // J + N + L + M + 2 nodes (no root tasks): 2 + 3 + 2 + 4 + 2.
  EXPECT_EQ(network_.node_count(), 13u);
  const NodeId x = builder_.cluster_aggregator();
  const NodeId s = builder_.sink();
  // X -> R_l carries the rack's slots, R_l -> C_m and C_m -> S one slot.
  EXPECT_EQ(Arc(x, R("r1")).capacity, 2);
  EXPECT_EQ(Arc(R("r2"), M(3)).capacity, 1);
  EXPECT_EQ(Arc(M(4), s).capacity, 1);
  // Shares: M = 4, K = 2: A_1 = min(2, 2) = 2, A_2 = min(2, 1) = 1, and
  // QFP sets E = F = A, so U_j has supply F - N = 0 and capacity F - E = 0.
  EXPECT_EQ(network_.node(U(1)).supply, 0);
  EXPECT_EQ(Arc(U(1), s).capacity, 0);
  EXPECT_EQ(network_.node(s).supply, -3);  // -(sum F_j)

  // Ten seconds waiting: upsilon = 0.5 * 1024 * 10.
  EXPECT_EQ(Arc(T(11), U(1)).cost, 5120);
  // t11: B_r1 = 800, B_r2 = 200, T = 1000.
  //   gamma_m1 = psi (800 - 800) + xi (1000 - 800) = 400
  //   gamma_m3 = psi (200 - 200) + xi (1000 - 200) = 1600
  //   rho_r1 = psi (800 - 0) + xi 200 = 1200 (m2 holds nothing)
  //   rho_r2 = psi (200 - 0) + xi 800 = 1800
  //   alpha = psi R^X + xi X^X = 800 + 2 (1000 - 200) = 2400
  EXPECT_EQ(Arc(T(11), M(1)).cost, 400);
  EXPECT_EQ(Arc(T(11), M(3)).cost, 1600);
  EXPECT_EQ(Arc(T(11), R("r1")).cost, 1200);
  EXPECT_EQ(Arc(T(11), R("r2")).cost, 1800);
  EXPECT_EQ(Arc(T(11), x).cost, 2400);
  // t12 has no data: only U_1 and X, at no data cost.
  EXPECT_EQ(Arc(T(12), x).cost, 0);
  size_t t12_arcs = 0;
  network_.ForEachOutArc(T(12), [&](const ArcView&) { ++t12_arcs; });
  EXPECT_EQ(t12_arcs, 2u);
  // t21: gamma_m4 = 0 + 2 * 400 = 800; rho_r2 = 600 + 800 = 1400;
  // alpha = 600 + 2 * 1000 = 2600. Rack r1 and m3 hold nothing of it.
  EXPECT_EQ(Arc(T(21), M(4)).cost, 800);
  EXPECT_EQ(Arc(T(21), R("r2")).cost, 1400);
  EXPECT_EQ(Arc(T(21), x).cost, 2600);
  EXPECT_FALSE(network_.FindArc(T(21), R("r1")).has_value());

  // Data locality wins: every task must run (E = F), t11 on m1 (400),
  // t21 on m4 (800), t12 anywhere left (0).
  auto round = Solve();
  EXPECT_EQ(round.total_cost, 1200);
  EXPECT_EQ(round.machine_of[11], 1u);
  EXPECT_EQ(round.machine_of[21], 4u);
  EXPECT_THAT(round.machine_of[12], ::testing::AnyOf(2u, 3u));
}

// Task a runs on m1 with no input; b waits and has all 1000 MiB on m1. QP
// with N = 2 <= M = 4 makes both run (E = F = N). Either a stays
// (cost d* - p* = 0 - 1024 theta) and b runs in rack r1 via R_r1 (rho =
// 1000), or a moves via X (alpha = 0) and b takes m1 (gamma = 0). Moving
// pays iff 1000 - 1024 theta > 0, i.e. theta < 0.977 s.
TEST_F(QuincyPolicyTest, RecentlyStartedTaskMovesForLocality) {
  Init(QuincyVariant::kQp);
  Submit(0, 1, {Task(1, 0)});
  Sync(0);
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 0, changes_), IsOk());
  Apply(0, cluster::TaskSubmitted{JobId(1),
                                  Task(2, 1000, {{MachineId(1), "", 1000}})});
  Sync(kSecond / 2);
  EXPECT_EQ(Arc(T(1), M(1)).cost, -512 - QuincyNetworkParams{}.stay_bonus);
  EXPECT_EQ(Arc(T(2), R("r1")).cost, 1000);
  auto round = Solve();
  EXPECT_EQ(round.machine_of[2], 1u);
  EXPECT_NE(round.machine_of[1], 1u);
  EXPECT_NE(round.machine_of[1], 0u);
}

TEST_F(QuincyPolicyTest, TaskThatRanLongEnoughIsNotPreempted) {
  Init(QuincyVariant::kQp);
  Submit(0, 1, {Task(1, 0)});
  Sync(0);
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 0, changes_), IsOk());
  Apply(0, cluster::TaskSubmitted{JobId(1),
                                  Task(2, 1000, {{MachineId(1), "", 1000}})});
  Sync(2 * kSecond);
  EXPECT_EQ(Arc(T(1), M(1)).cost, -2048 - QuincyNetworkParams{}.stay_bonus);
  auto round = Solve();
  EXPECT_EQ(round.machine_of[1], 1u);
  EXPECT_EQ(round.machine_of[2], 2u);  // same rack, via R_r1
  // Refresh prices time: at 0.5 s the move would pay again, but theta is
  // cumulative and only grows.
  ASSERT_THAT(policy_->Refresh(state_, SyncContext{3 * kSecond}, builder_),
              IsOk());
  EXPECT_EQ(Arc(T(1), M(1)).cost, -3072 - QuincyNetworkParams{}.stay_bonus);
}

TEST_F(QuincyPolicyTest, QfNeverPreemptsOrMoves) {
  Init(QuincyVariant::kQf);
  Submit(0, 1, {Task(1, 0)});
  Sync(0);
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 0, changes_), IsOk());
  Apply(0, cluster::TaskSubmitted{JobId(1),
                                  Task(2, 1000, {{MachineId(1), "", 1000}})});
  Sync(kSecond / 2);  // the move would pay under QP (test above)
  // The running task keeps a single arc, to its computer.
  size_t arcs = 0;
  network_.ForEachOutArc(T(1), [&](const ArcView& arc) {
    ++arcs;
    EXPECT_EQ(arc.dst, M(1));
  });
  EXPECT_EQ(arcs, 1u);
  auto round = Solve();
  EXPECT_EQ(round.machine_of[1], 1u);
  EXPECT_EQ(round.machine_of[2], 2u);
}

// Job 1 runs four tasks on all four computers; job 2 submits two.
// QFP: A_1 = A_2 = min(floor(4 / 2), N_j) = 2, so two of job 1's tasks are
// preempted for job 2's. QF: job 1 keeps its 4 (raised share), job 2's share
// is cut to 0. Q: E_2 = 1 cannot fit (no free slot, no preemption) and is
// lowered to 0.
class QuincyFairnessTest : public QuincyPolicyTest,
                           public ::testing::WithParamInterface<
                               std::tuple<QuincyVariant, int64_t, int64_t>> {};

TEST_P(QuincyFairnessTest, BoundsHoldAfterSolving) {
  const auto [variant, job1_scheduled, job2_scheduled] = GetParam();
  Init(variant);
  Submit(0, 1, {Task(1, 0), Task(2, 0), Task(3, 0), Task(4, 0)});
  Sync(0);
  for (uint64_t t = 1; t <= 4; ++t) {
    ASSERT_THAT(state_.Place(TaskId(t), MachineId(t), 0, changes_), IsOk());
  }
  Submit(100 * kSecond, 2, {Task(5, 0), Task(6, 0)});
  Sync(100 * kSecond);
  auto bounds = policy_->ComputeBounds(state_);
  auto round = Solve();
  auto scheduled = Scheduled(round);
  for (const auto& [job, b] : bounds) {
    EXPECT_LE(b.min_running, scheduled[job.value()]) << "job " << job;
    EXPECT_GE(b.max_running, scheduled[job.value()]) << "job " << job;
  }
  EXPECT_EQ(scheduled[1], job1_scheduled);
  EXPECT_EQ(scheduled[2], job2_scheduled);
  // Non-preemptive variants keep every running task where it is.
  if (variant == QuincyVariant::kQf || variant == QuincyVariant::kQ) {
    for (uint64_t t = 1; t <= 4; ++t) EXPECT_EQ(round.machine_of[t], t);
  }
  cluster::ChangeSet applied;
  ASSERT_THAT(flow::testing::ApplyRound(round, state_, 100 * kSecond, applied),
              IsOk());
}

INSTANTIATE_TEST_SUITE_P(
    Variants, QuincyFairnessTest,
    ::testing::Values(std::tuple(QuincyVariant::kQfp, 2, 2),
                      std::tuple(QuincyVariant::kQfpx, 2, 2),
                      std::tuple(QuincyVariant::kQf, 4, 0),
                      std::tuple(QuincyVariant::kQ, 4, 0)));

TEST_F(QuincyPolicyTest, QfSharesAreRaisedAndCutProportionally) {
  Init(QuincyVariant::kQf);
  Submit(0, 1, {Task(1, 0), Task(2, 0), Task(3, 0), Task(4, 0)});
  Sync(0);
  for (uint64_t t = 1; t <= 3; ++t) {
    ASSERT_THAT(state_.Place(TaskId(t), MachineId(t), 0, changes_), IsOk());
  }
  Submit(0, 2, {Task(5, 0), Task(6, 0)});
  auto bounds = policy_->ComputeBounds(state_);
  // A = (2, 2); job 1 runs 3 > 2 -> A_1 = 3; total 5 > 4: job 2 is cut by
  // one to 2 - 1 = 1.
  EXPECT_EQ(bounds[JobId(1)].share, 3);
  EXPECT_EQ(bounds[JobId(2)].share, 1);
  EXPECT_EQ(bounds[JobId(2)].min_running, 1);
}

TEST_F(QuincyPolicyTest, QpWithMoreTasksThanSlotsLetsJobsVary) {
  Init(QuincyVariant::kQp);
  Submit(0, 1, {Task(1, 0), Task(2, 0), Task(3, 0)});
  Submit(0, 2, {Task(4, 0), Task(5, 0)});
  Sync(kSecond);
  auto bounds = policy_->ComputeBounds(state_);
  EXPECT_EQ(bounds[JobId(1)].min_running, 1);
  EXPECT_EQ(bounds[JobId(1)].max_running, 3);
  // U_1: supply F - N = 0, capacity F - E = 2.
  EXPECT_EQ(network_.node(U(1)).supply, 0);
  EXPECT_EQ(Arc(U(1), builder_.sink()).capacity, 2);
  auto round = Solve();
  auto scheduled = Scheduled(round);
  EXPECT_EQ(scheduled[1] + scheduled[2], 4);
  EXPECT_GE(scheduled[2], 1);
}

TEST_F(QuincyPolicyTest, AdmissionLimitQueuesLaterJobs) {
  QuincyParams params;
  params.admission_limit = 1;
  policy_ = std::make_unique<QuincyPolicy>(params);
  for (uint64_t m = 1; m <= 4; ++m) {
    Apply(0, cluster::MachineAdded{MachineId(m), "r1", {}, 1, {}});
  }
  Submit(0, 1, {Task(1, 0), Task(2, 0)});
  Submit(0, 2, {Task(3, 0)});
  Sync(kSecond);
  auto round = Solve();
  EXPECT_NE(round.machine_of[1], 0u);
  EXPECT_NE(round.machine_of[2], 0u);
  EXPECT_EQ(round.machine_of[3], 0u);
}

// A task that has just started (theta = 0) could move to any computer of
// equal data cost for free; a solver from scratch breaks such ties its own
// way, which at 12,500 machines migrated 28 % of all tasks one round after
// they were placed. The stay bonus makes staying the strict optimum.
TEST_F(QuincyPolicyTest, TasksThatJustStartedStayAmongEqualChoices) {
  Init(QuincyVariant::kQfp);
  Submit(0, 1, {Task(1, 0), Task(2, 0)});  // no input: every computer equal
  Sync(0);
  auto first = Solve();
  ASSERT_NE(first.machine_of[1], 0u);
  ASSERT_NE(first.machine_of[2], 0u);
  // Start them on the two computers the solver did not choose.
  std::vector<uint64_t> others;
  for (uint64_t m = 1; m <= 4; ++m) {
    if (m != first.machine_of[1] && m != first.machine_of[2]) {
      others.push_back(m);
    }
  }
  ASSERT_EQ(others.size(), 2u);
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(others[0]), 0, changes_),
              IsOk());
  ASSERT_THAT(state_.Place(TaskId(2), MachineId(others[1]), 0, changes_),
              IsOk());
  Sync(0);
  auto second = Solve();
  EXPECT_EQ(second.machine_of[1], others[0]);
  EXPECT_EQ(second.machine_of[2], others[1]);
  EXPECT_EQ(Arc(T(1), M(others[0])).cost, -QuincyNetworkParams{}.stay_bonus);
}

TEST_F(QuincyPolicyTest, MachineChangesRederivePreferencesAndRacks) {
  Init(QuincyVariant::kQfp);
  Submit(0, 1, {Task(1, 100, {{MachineId(9), "", 100}})});
  Sync(0);
  EXPECT_EQ(network_.node_count(), 1u + 1 + 2 + 4 + 1 + 1);
  // Machine 9 arrives in a new rack; the task now prefers it and its rack.
  Apply(0, cluster::MachineAdded{MachineId(9), "r3", {}, 2, {}});
  Sync(0);
  ASSERT_NE(R("r3"), kNoNode);
  EXPECT_EQ(Arc(T(1), M(9)).cost, 0);
  EXPECT_EQ(Arc(T(1), R("r3")).cost, 0);
  EXPECT_EQ(Arc(builder_.cluster_aggregator(), R("r3")).capacity, 2);
  Apply(0, cluster::MachineRemoved{MachineId(9)});
  Sync(0);
  EXPECT_EQ(R("r3"), kNoNode);
  EXPECT_EQ(network_.node_count(), 10u);
  // A restored builder finds the rack nodes again.
  NetworkBuilder restored(network_);
  ASSERT_THAT(restored.RestoreFromNetwork(), IsOk());
  EXPECT_EQ(restored.FindRackNode("r1"), R("r1"));
}

// Every computer of r1 holds input and both racks do, so the rack worst
// case uses the smallest L_m of r1 and the cluster's X^X the smaller B_l.
// t1 reads 1000 MiB: 300 on m1, 200 on m2, 400 on m3, 100 nowhere known.
//   r1: B = 500, min L = 200: rho = 300 + 2 * 500 = 1300
//   r2: B = 400, m4 holds none: rho = 400 + 2 * 600 = 1600
//   alpha = R^X + 2 X^X = max(300, 400) + 2 * (1000 - 400) = 1600
//   gamma: m1 200 + 2 * 500 = 1200, m2 1300, m3 0 + 2 * 600 = 1200
// Running on m4 (not preferred, rack preferred): d* = rho_r2 = 1600.
TEST_F(QuincyPolicyTest, RackWorstCasesWhenEveryComputerHoldsInput) {
  Init(QuincyVariant::kQfp);
  Submit(0, 1,
         {Task(1, 0,
               {{MachineId(1), "", 300},
                {MachineId(2), "", 200},
                {MachineId(3), "", 400},
                {MachineId(77), "", 100}})});
  Sync(0);
  EXPECT_EQ(Arc(T(1), R("r1")).cost, 1300);
  EXPECT_EQ(Arc(T(1), R("r2")).cost, 1600);
  EXPECT_EQ(Arc(T(1), builder_.cluster_aggregator()).cost, 1600);
  EXPECT_EQ(Arc(T(1), M(1)).cost, 1200);
  EXPECT_EQ(Arc(T(1), M(2)).cost, 1300);
  EXPECT_EQ(Arc(T(1), M(3)).cost, 1200);
  EXPECT_FALSE(network_.FindArc(T(1), M(4)).has_value());
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(4), 0, changes_), IsOk());
  Sync(0);
  EXPECT_EQ(Arc(T(1), M(4)).cost, 1600 - QuincyNetworkParams{}.stay_bonus);
  ASSERT_THAT(policy_->Refresh(state_, SyncContext{kSecond}, builder_), IsOk());
  EXPECT_EQ(Arc(T(1), M(4)).cost,
            1600 - 1024 - QuincyNetworkParams{}.stay_bonus);
}

// A replicated block is in a rack once however many of its computers hold
// a copy (cluster::LocateInput). t1 reads one 1000 MiB block with replicas
// on m1 (r1) and on m3 and m4 (r2), as HDFS places them:
//   gamma: m1, m3, m4 all 0 (every byte local)
//   r1: B = 1000, m2 holds none: rho = 1000 + 2 * 0 = 1000
//   r2: B = 1000 (not 2000), min L = 1000: rho = 0
//   alpha = R^X + 2 X^X = 1000 + 2 * (1000 - 1000) = 1000
TEST_F(QuincyPolicyTest, AReplicatedBlockCountsOncePerRack) {
  Init(QuincyVariant::kQfp);
  Submit(0, 1,
         {Task(1, 1000,
               {{MachineId(1), "", 1000},
                {MachineId(3), "", 1000},
                {MachineId(4), "", 1000},
                {MachineId(), "r1", 1000},
                {MachineId(), "r2", 1000}})});
  Sync(0);
  EXPECT_EQ(Arc(T(1), M(1)).cost, 0);
  EXPECT_EQ(Arc(T(1), M(3)).cost, 0);
  EXPECT_EQ(Arc(T(1), M(4)).cost, 0);
  EXPECT_EQ(Arc(T(1), R("r1")).cost, 1000);
  EXPECT_EQ(Arc(T(1), R("r2")).cost, 0);
  EXPECT_EQ(Arc(T(1), builder_.cluster_aggregator()).cost, 1000);
}

// Refresh records a change only for an arc whose price moved: nothing at
// the time of the last Refresh, and later only the wait arcs of waiting tasks
// and the running arcs of running tasks, each once.
TEST_F(QuincyPolicyTest, RefreshRecordsOnlyCostsThatChanged) {
  Init(QuincyVariant::kQfp);
  Submit(0, 1, {Task(1, 10, {{MachineId(1), "", 10}}), Task(2, 0)});
  Submit(0, 2, {Task(3, 0), Task(4, 0), Task(5, 0), Task(6, 0)});
  Sync(0);
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), kSecond, changes_), IsOk());
  Sync(kSecond);  // re-derives task 1 only: the others are priced at 0
  ASSERT_THAT(policy_->Refresh(state_, SyncContext{kSecond}, builder_), IsOk());
  network_.set_record_changes(true);
  ASSERT_THAT(policy_->Refresh(state_, SyncContext{kSecond}, builder_), IsOk());
  EXPECT_TRUE(network_.TakeChanges().empty());
  ASSERT_THAT(policy_->Refresh(state_, SyncContext{3 * kSecond}, builder_),
              IsOk());
  std::map<std::pair<NodeId, NodeId>, int> set_arcs;
  for (const GraphChange& change : network_.TakeChanges()) {
    ASSERT_EQ(change.type, GraphChange::Type::kSetArc);
    ++set_arcs[{change.src, change.dst}];
  }
  std::map<std::pair<NodeId, NodeId>, int> expected = {{{T(1), M(1)}, 1}};
  for (uint64_t task = 2; task <= 6; ++task) {
    expected[{T(task), U(task == 2 ? 1 : 2)}] = 1;
  }
  EXPECT_EQ(set_arcs, expected);
  EXPECT_EQ(Arc(T(2), U(1)).cost, 3 * 512);
  ASSERT_THAT(policy_->Refresh(state_, SyncContext{3 * kSecond}, builder_),
              IsOk());
  EXPECT_TRUE(network_.TakeChanges().empty());
}

// A running task's arc is re-priced only when its priced theta steps:
// every 100 ms up to 1.6 s, ..., every 1.6 s from 12.8 s to 25.6 s; a
// waiting task's wait arc every round.
TEST_F(QuincyPolicyTest, RefreshRepricesRunningTasksOnlyWhenThetaSteps) {
  Init(QuincyVariant::kQfp);
  Submit(0, 1, {Task(1, 0), Task(2, 0)});
  Sync(0);
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 0, changes_), IsOk());
  Sync(0);
  network_.set_record_changes(true);
  const auto changed_arcs = [&](int64_t now) {
    EXPECT_THAT(policy_->Refresh(state_, SyncContext{now}, builder_), IsOk());
    std::set<std::pair<NodeId, NodeId>> arcs;
    for (const GraphChange& change : network_.TakeChanges()) {
      if (change.type == GraphChange::Type::kSetArc) {
        arcs.insert({change.src, change.dst});
      }
    }
    return arcs;
  };
  using Arcs = std::set<std::pair<NodeId, NodeId>>;
  EXPECT_EQ(changed_arcs(kSecond / 20), (Arcs{{T(2), U(1)}}));
  EXPECT_EQ(changed_arcs(kSecond / 10), (Arcs{{T(1), M(1)}, {T(2), U(1)}}));
  EXPECT_EQ(changed_arcs(kSecond / 10), Arcs{});
  EXPECT_EQ(Arc(T(1), M(1)).cost, -102 - QuincyNetworkParams{}.stay_bonus);
  EXPECT_EQ(changed_arcs(20 * kSecond), (Arcs{{T(1), M(1)}, {T(2), U(1)}}));
  EXPECT_EQ(changed_arcs(20'500'000), (Arcs{{T(2), U(1)}}));
  EXPECT_EQ(changed_arcs(20'800'000), (Arcs{{T(1), M(1)}, {T(2), U(1)}}));
  EXPECT_EQ(Arc(T(1), M(1)).cost, -21'299 - QuincyNetworkParams{}.stay_bonus);
}

// The whole network as sorted lines naming nodes by kind and entity, so
// that networks built in different orders compare equal.
// Incremental Syncs and Refreshes over a random history (placements by the
// solver, finishes, arrivals, machines leaving and joining) end in the
// network a fresh policy builds from scratch at the same time, and a fresh
// policy's first Refresh over that network (a restart) changes nothing.
// With `resources`, machines have CPU and every task asks for some, so
// tasks wait and run through their request shapes' aggregators; every
// placement must fit (ClusterState::Place refuses one that does not).
class QuincyRebuildTest
    : public ::testing::TestWithParam<std::tuple<QuincyVariant, bool>> {};

TEST_P(QuincyRebuildTest, RefreshMatchesAFromScratchBuild) {
  const QuincyParams params = QuincyParams::ForVariant(std::get<0>(GetParam()));
  const bool resources = std::get<1>(GetParam());
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  FlowNetwork network;
  NetworkBuilder builder(network);
  QuincyPolicy policy(params);
  std::mt19937_64 rng(7);
  const auto pick = [&](uint64_t n) { return rng() % n; };
  const auto apply = [&](int64_t t, cluster::EventBody body) {
    ASSERT_THAT(state.Apply(ClusterEvent{"e", t, "t", body}, t, changes),
                IsOk());
  };
  for (uint64_t m = 1; m <= 9; ++m) {
    apply(0, cluster::MachineAdded{MachineId(m),
                                   absl::StrCat("r", m % 3),
                                   {resources ? 2000 : 0, 0, 0},
                                   2,
                                   {}});
  }
  uint64_t next_task = 1;
  const auto random_task = [&]() {
    std::vector<DataLocality> input;
    for (uint64_t i = pick(4); i > 0; --i) {
      if (pick(4) == 0) {
        input.push_back({MachineId(), absl::StrCat("r", pick(4)),
                         static_cast<int64_t>(1 + pick(500)) * kMiB});
      } else {
        input.push_back({MachineId(1 + pick(11)), "",
                         static_cast<int64_t>(1 + pick(500)) * kMiB});
      }
    }
    cluster::TaskSpec spec{
        .id = TaskId(next_task++),
        .input = input,
        .input_bytes = static_cast<int64_t>(pick(800)) * kMiB};
    if (resources) {
      spec.request.cpu_millis = 500 * static_cast<int64_t>(1 + pick(3));
    }
    return spec;
  };
  int64_t now = 0;
  for (int step = 0; step < 12; ++step) {
    now += kSecond / 3;
    if (step % 3 == 0) {
      std::vector<cluster::TaskSpec> tasks;
      for (uint64_t i = 1 + pick(4); i > 0; --i) tasks.push_back(random_task());
      apply(now, cluster::JobSubmitted{JobId(1 + step), "j", 0, tasks});
    }
    if (step == 5) apply(now, cluster::MachineRemoved{MachineId(4)});
    if (step == 8) {
      apply(now, cluster::MachineAdded{MachineId(11), "r7", {}, 3, {}});
    }
    if (step == 10 && !state.tasks().empty()) {
      const cluster::Task& first = state.tasks().begin()->second;
      apply(now, cluster::TaskFinished{first.job, first.spec.id});
    }
    ASSERT_THAT(policy.Sync(changes, state, SyncContext{now}, builder), IsOk());
    changes.Clear();
    ASSERT_THAT(policy.Refresh(state, SyncContext{now}, builder), IsOk());
    auto round = flow::testing::SolveNetwork(network);
    ASSERT_THAT(round, IsOk());
    ASSERT_THAT(flow::testing::ApplyRound(*round, state, now, changes), IsOk());
  }
  ASSERT_THAT(policy.Sync(changes, state, SyncContext{now}, builder), IsOk());
  changes.Clear();
  now += 5 * kSecond;
  ASSERT_THAT(policy.Refresh(state, SyncContext{now}, builder), IsOk());

  FlowNetwork scratch;
  NetworkBuilder scratch_builder(scratch);
  QuincyPolicy fresh(params);
  ASSERT_THAT(fresh.Sync(flow::testing::Everything(state), state,
                         SyncContext{now}, scratch_builder),
              IsOk());
  EXPECT_GT(state.tasks().size(), 5u);
  size_t running = 0;
  for (const auto& [id, task] : state.tasks()) running += task.running();
  EXPECT_GT(running, 2u);
  EXPECT_EQ(flow::testing::Describe(network), flow::testing::Describe(scratch));

  NetworkBuilder restored(network);
  ASSERT_THAT(restored.RestoreFromNetwork(), IsOk());
  QuincyPolicy restarted(params);
  network.set_record_changes(true);
  ASSERT_THAT(restarted.Refresh(state, SyncContext{now}, restored), IsOk());
  EXPECT_TRUE(network.TakeChanges().empty());
}

INSTANTIATE_TEST_SUITE_P(
    Variants, QuincyRebuildTest,
    ::testing::Combine(::testing::Values(QuincyVariant::kQfp,
                                         QuincyVariant::kQf, QuincyVariant::kQp,
                                         QuincyVariant::kQ,
                                         QuincyVariant::kQfpx),
                       ::testing::Bool()));

// Tasks that ask for CPU or devices reach machines only where they fit:
// the preferred computer takes what fits it, its rack the rest before the
// other rack, a device task goes only to the machine with devices, and no
// placement of any round over-commits a machine.
TEST_F(QuincyPolicyTest, TasksAskingForRoomFitAndKeepTheirLocality) {
  policy_ = std::make_unique<QuincyPolicy>(
      QuincyParams::ForVariant(QuincyVariant::kQfp));
  for (uint64_t m = 1; m <= 4; ++m) {
    cluster::MachineAdded added{
        MachineId(m), m <= 2 ? "r1" : "r2", {2000, 0, 0}, 4, {}};
    if (m == 4) {
      cluster::AcceleratorGroup gpus;
      gpus.count = 1;
      gpus.model = "a10";
      added.accelerators.push_back(gpus);
    }
    Apply(0, added);
  }
  std::vector<cluster::TaskSpec> tasks;
  for (uint64_t t = 1; t <= 4; ++t) {
    cluster::TaskSpec spec = Task(t, 100, {{MachineId(1), "", 100}});
    spec.request.cpu_millis = 1000;  // two per machine
    tasks.push_back(spec);
  }
  cluster::TaskSpec gpu = Task(5, 0);
  gpu.accelerator.milli = 500;
  tasks.push_back(gpu);
  cluster::TaskSpec huge = Task(6, 0);
  huge.request.cpu_millis = 4000;  // fits nowhere: waits, no infeasibility
  tasks.push_back(huge);
  Submit(0, 1, tasks);
  for (int round = 0; round < 3; ++round) {
    Sync(round * kSecond);
    ASSERT_THAT(
        policy_->Refresh(state_, SyncContext{round * kSecond}, builder_),
        IsOk());
    const flow::testing::SolvedRound solved = Solve();
    ASSERT_THAT(
        flow::testing::ApplyRound(solved, state_, round * kSecond, changes_),
        IsOk());
    for (const auto& [id, machine] : state_.machines()) {
      EXPECT_TRUE(cluster::WithinCapacity(machine)) << id;
    }
  }
  std::map<uint64_t, int> on_machine;
  for (uint64_t t = 1; t <= 4; ++t) {
    const cluster::Task* task = state_.FindTask(TaskId(t));
    ASSERT_TRUE(task->running()) << t;
    ++on_machine[task->machine.value()];
  }
  EXPECT_EQ(on_machine, (std::map<uint64_t, int>{{1, 2}, {2, 2}}));
  EXPECT_EQ(state_.FindTask(TaskId(5))->machine, MachineId(4));
  EXPECT_FALSE(state_.FindTask(TaskId(6))->running());
}

// A reservation is exclusive, so a shape that held room on every computer
// its task prefers would keep the other shapes out. Eight tasks of eight
// shapes (their memory asks differ) each prefer all four machines of one
// rack, which hold two tasks each: all eight have room, and run, after one
// round.
TEST_F(QuincyPolicyTest, ShapesReserveOnlyTheRoomTheyNeed) {
  policy_ = std::make_unique<QuincyPolicy>(
      QuincyParams::ForVariant(QuincyVariant::kQfp));
  for (uint64_t m = 1; m <= 4; ++m) {
    Apply(0, cluster::MachineAdded{
                 MachineId(m), "r1", {2000, 64 * kGiB, 0}, 8, {}});
  }
  std::vector<cluster::TaskSpec> tasks;
  for (uint64_t t = 1; t <= 8; ++t) {
    std::vector<DataLocality> input;
    for (uint64_t m = 1; m <= 4; ++m) input.push_back({MachineId(m), "", 100});
    cluster::TaskSpec spec = Task(t, 400, input);
    spec.request.cpu_millis = 1000;
    spec.request.memory_bytes = static_cast<int64_t>(t) * kMiB;
    tasks.push_back(spec);
  }
  Submit(0, 1, tasks);
  RunRound(0);
  std::map<uint64_t, int> on_machine;
  for (uint64_t t = 1; t <= 8; ++t) {
    const cluster::Task* task = state_.FindTask(TaskId(t));
    ASSERT_TRUE(task->running()) << t;
    ++on_machine[task->machine.value()];
  }
  EXPECT_EQ(on_machine,
            (std::map<uint64_t, int>{{1, 2}, {2, 2}, {3, 2}, {4, 2}}));
}

// A shape's tasks get room where each of them prefers, not where the
// first of them does. One shape of four tasks, task t reading only from
// machine t of rack r1, which has room for two more and runs one task (so
// the 70 idle machines of rack r2 come first by load, and the few
// machines more each shape gets from the room left are theirs): every
// task runs on its own machine.
TEST_F(QuincyPolicyTest, EachTaskOfAShapeGetsRoomWhereItPrefers) {
  policy_ = std::make_unique<QuincyPolicy>(
      QuincyParams::ForVariant(QuincyVariant::kQfp));
  for (uint64_t m = 1; m <= 74; ++m) {
    Apply(0, cluster::MachineAdded{MachineId(m),
                                   m <= 4 ? "r1" : "r2",
                                   {m <= 4 ? 3000 : 2000, 0, 0},
                                   8,
                                   {}});
  }
  std::vector<cluster::TaskSpec> running;
  for (uint64_t m = 1; m <= 4; ++m) {
    cluster::TaskSpec spec = Task(100 + m, 0);
    spec.request.cpu_millis = 1000;
    running.push_back(spec);
  }
  Submit(0, 1, running);
  for (uint64_t m = 1; m <= 4; ++m) {
    ASSERT_THAT(state_.Place(TaskId(100 + m), MachineId(m), 0, changes_),
                IsOk());
  }
  std::vector<cluster::TaskSpec> tasks;
  for (uint64_t t = 1; t <= 4; ++t) {
    cluster::TaskSpec spec = Task(t, 100, {{MachineId(t), "", 100}});
    spec.request.cpu_millis = 1000;
    tasks.push_back(spec);
  }
  Submit(0, 2, tasks);
  RunRound(0);
  for (uint64_t t = 1; t <= 4; ++t) {
    EXPECT_EQ(state_.FindTask(TaskId(t))->machine, MachineId(t)) << t;
  }
}

// Room that more work prefers than it holds goes to the work that loses
// most elsewhere. m1 (rack r1) has room for one of two tasks of different
// shapes; m3 (rack r2) for the other. The task with 900 MiB on m1 runs
// there and the one with 100 MiB goes to r2, whichever shape sorts first
// (the parameter: whether the task of the first shape reads more).
class QuincyContestedRoomTest : public QuincyPolicyTest,
                                public ::testing::WithParamInterface<bool> {};

TEST_P(QuincyContestedRoomTest, GoesToTheTaskThatLosesMostElsewhere) {
  policy_ = std::make_unique<QuincyPolicy>(
      QuincyParams::ForVariant(QuincyVariant::kQfp));
  Apply(0, cluster::MachineAdded{MachineId(1), "r1", {1000, 0, 0}, 4, {}});
  Apply(0, cluster::MachineAdded{MachineId(3), "r2", {1000, 0, 0}, 4, {}});
  // Task 1 asks 1000 millis, task 2 999: two shapes, whose keys sort one
  // way; which of them reads more is the parameter.
  const uint64_t big = GetParam() ? 1 : 2;
  std::vector<cluster::TaskSpec> tasks;
  for (uint64_t t = 1; t <= 2; ++t) {
    const int64_t mib = t == big ? 900 : 100;
    cluster::TaskSpec spec = Task(t, mib, {{MachineId(1), "", mib}});
    spec.request.cpu_millis = t == 1 ? 1000 : 999;
    tasks.push_back(spec);
  }
  Submit(0, 1, tasks);
  RunRound(0);
  EXPECT_EQ(state_.FindTask(TaskId(big))->machine, MachineId(1));
  EXPECT_EQ(state_.FindTask(TaskId(3 - big))->machine, MachineId(3));
}

INSTANTIATE_TEST_SUITE_P(BothShapeOrders, QuincyContestedRoomTest,
                         ::testing::Bool());

// SyncJobs starts from job counts kept from change set to change set
// (QuincyNetwork::UpdateJobCounts). After every Sync of a random run of
// submissions, ends, placements, preemptions and machine losses, every
// job node must carry the bounds of a walk over the whole state.
TEST(QuincyJobCountsTest, KeptCountsGiveTheBoundsOfAFullWalk) {
  for (const QuincyVariant variant :
       {QuincyVariant::kQfp, QuincyVariant::kQf}) {
    QuincyPolicy policy(QuincyParams::ForVariant(variant));
    cluster::ClusterState state;
    FlowNetwork network;
    NetworkBuilder builder{network};
    cluster::ChangeSet changes;
    std::mt19937_64 rng(static_cast<uint64_t>(variant) + 7);
    auto apply = [&](cluster::EventBody body) {
      ASSERT_THAT(state.Apply(ClusterEvent{"e", 0, "t", body}, 0, changes),
                  IsOk());
    };
    uint64_t next_machine = 1, next_task = 1;
    for (int m = 0; m < 24; ++m, ++next_machine) {
      apply(cluster::MachineAdded{
          MachineId(next_machine), absl::StrCat("r", m % 4), {}, 2, {}});
    }
    int incremental_syncs = 0;
    for (int step = 0; step < 400; ++step) {
      const uint64_t op = rng() % 10;
      std::vector<const cluster::Task*> waiting, running;
      for (const auto& [id, task] : state.tasks()) {
        (task.running() ? running : waiting).push_back(&task);
      }
      if (op < 3 || state.tasks().empty()) {
        std::vector<cluster::TaskSpec> tasks;
        for (uint64_t n = 1 + rng() % 3; n > 0; --n) {
          tasks.push_back({.id = TaskId(next_task++)});
        }
        if (!state.jobs().empty() && rng() % 2 == 0) {
          auto job = state.jobs().begin();
          std::advance(job, static_cast<long>(rng() % state.jobs().size()));
          apply(cluster::TaskSubmitted{job->first, tasks.front()});
        } else {
          // Ids drawn at random, so that new jobs land between listed ones.
          JobId id(1 + rng() % 5000);
          while (state.FindJob(id) != nullptr) id = JobId(1 + rng() % 5000);
          apply(cluster::JobSubmitted{id, "j", 0, tasks});
        }
      } else if (op < 5) {
        auto task = state.tasks().begin();
        std::advance(task, static_cast<long>(rng() % state.tasks().size()));
        apply(cluster::TaskFinished{task->second.job, task->first});
      } else if (op < 8 && !waiting.empty()) {
        const cluster::Task* task = waiting[rng() % waiting.size()];
        for (const auto& [id, machine] : state.machines()) {
          if (machine.free_slots() > 0) {
            ASSERT_THAT(state.Place(task->spec.id, id, 0, changes), IsOk());
            break;
          }
        }
      } else if (op < 9 && !running.empty()) {
        ASSERT_THAT(
            state.Preempt(running[rng() % running.size()]->spec.id, 0, changes),
            IsOk());
      } else if (state.machines().size() > 8) {
        apply(cluster::MachineRemoved{state.machines().begin()->first});
        apply(
            cluster::MachineAdded{MachineId(next_machine++), "r9", {}, 2, {}});
      }
      // Change sets of one to three steps reach the policy.
      if (rng() % 3 != 0) continue;
      incremental_syncs += state.jobs().size() >= 16 ? 1 : 0;
      ASSERT_THAT(policy.Sync(changes, state, SyncContext{0}, builder), IsOk());
      changes.Clear();
      for (const auto& [id, b] : policy.ComputeBounds(state)) {
        const NodeId node = builder.FindJobNode(id);
        ASSERT_NE(node, kNoNode) << "job " << id;
        EXPECT_EQ(network.node(node).supply, b.max_running - b.tasks)
            << "job " << id << " step " << step;
        const std::optional<ArcView> arc = network.SoleOutArc(node);
        ASSERT_TRUE(arc.has_value());
        EXPECT_EQ(arc->capacity, b.max_running - b.min_running)
            << "job " << id << " step " << step;
      }
    }
    EXPECT_GT(incremental_syncs, 50);
  }
}

// The networks the Quincy variants build on random clusters (the slots'
// part pinned before they became built-in profiles, the room routes' since
// they reserve by need). Racks of computers with slots and some
// with CPU and devices; tasks reading input from computers and racks
// (some unknown), some asking for CPU or a device (the room routes), some
// jobs different-machines or gangs (soft E_j); random parameters (omega,
// psi, xi, preference thresholds and counts, theta's resolution,
// admission); synced eagerly or as the graph manager does, over rounds
// that place, finish and let tasks run long enough for theta to step, with
// a machine removed and another added in a new rack (every task priced
// again). Any change to a node, arc, capacity or cost changes a
// fingerprint.
TEST(QuincyPinTest, KeepsItsNetworkOnRandomClusters) {
  const std::vector<uint64_t> expected = {
      11301049503413563400ULL, 3832478982077624060ULL,  11587574106930713530ULL,
      6641919717300199514ULL,  9863398059597118802ULL,  7021537474666458715ULL,
      3895269333779282254ULL,  8980434768260051215ULL,  14639616924096537596ULL,
      8042685692040133793ULL,  8836886929631454450ULL,  5844440343031340535ULL,
      5431743263517384463ULL,  17511828538269767406ULL, 8259248478903167894ULL,
      4180393194536295936ULL,  15087300830935880705ULL, 12649011317279103312ULL,
      8383478685678822663ULL,  442570402363620155ULL,   13660586472874791157ULL,
      10736372959003387603ULL, 1852375200321707419ULL,  137574530216154153ULL,
      3518787107070593155ULL};
  std::vector<uint64_t> actual;
  const QuincyVariant variants[] = {QuincyVariant::kQfp, QuincyVariant::kQf,
                                    QuincyVariant::kQp, QuincyVariant::kQ,
                                    QuincyVariant::kQfpx};
  for (uint64_t seed = 1; seed <= 25; ++seed) {
    std::mt19937_64 rng(seed);
    QuincyParams params = QuincyParams::ForVariant(variants[seed % 5]);
    params.network.omega = std::vector<double>{0.5, 0.1, 3}[rng() % 3];
    params.network.psi = std::vector<double>{1, 0.5, 4}[rng() % 3];
    if (params.variant != QuincyVariant::kQfpx) {
      params.network.xi = std::vector<double>{2, 1, 8}[rng() % 3];
    }
    params.network.delta_computer = std::vector<double>{0.1, 0.3}[rng() % 2];
    params.network.delta_rack = std::vector<double>{0.1, 0.5}[rng() % 2];
    params.network.max_preferences = std::vector<size_t>{10, 1, 0}[rng() % 3];
    params.network.theta_bits = std::vector<int>{3, 0}[rng() % 2];
    params.admission_limit = std::vector<uint32_t>{0, 0, 2}[rng() % 3];
    params.network.omega_cap =
        std::vector<int64_t>{int64_t{1} << 20, 5000}[rng() % 2];
    QuincyPolicy policy(params);
    testing::PinnedRun run(policy, /*deferred=*/seed % 2 == 0);
    const auto apply = [&](cluster::EventBody body) {
      ASSERT_THAT(run.Apply(body), IsOk());
    };
    const auto sync = [&]() { ASSERT_THAT(run.Sync(), IsOk()); };
    const uint64_t racks = 1 + rng() % 4;
    uint64_t next_machine = 1;
    const auto add_machine = [&](uint64_t rack) {
      cluster::MachineAdded added{MachineId(next_machine++),
                                  absl::StrCat("r", rack),
                                  {},
                                  static_cast<uint32_t>(1 + rng() % 4),
                                  {}};
      if (rng() % 2 == 0) {
        added.capacity.cpu_millis = static_cast<int64_t>(1000 + rng() % 8000);
        if (rng() % 3 == 0) added.accelerators.push_back({2, "A10", 1000, 0});
      }
      apply(added);
    };
    const int machines = 4 + static_cast<int>(rng() % 17);
    for (int m = 0; m < machines; ++m) add_machine(rng() % racks);
    uint64_t next_task = 1;
    for (int wave = 0; wave < 4; ++wave) {
      const int jobs = 1 + static_cast<int>(rng() % 3);
      for (int j = 0; j < jobs; ++j) {
        cluster::JobSubmitted job{
            JobId(static_cast<uint64_t>(100 * wave + j + 1)), "j", 0, {}};
        job.different_machines = rng() % 8 == 0;
        const int n = 1 + static_cast<int>(rng() % 8);
        if (rng() % 8 == 0) job.min_members = static_cast<uint32_t>(n);
        for (int t = 0; t < n; ++t) {
          cluster::TaskSpec spec;
          spec.id = TaskId(next_task++);
          for (uint64_t i = rng() % 4; i > 0; --i) {
            const auto bytes = static_cast<int64_t>(1 + rng() % 900) * kMiB;
            if (rng() % 4 == 0) {
              spec.input.push_back(
                  {MachineId(), absl::StrCat("r", rng() % (racks + 1)), bytes});
            } else {
              spec.input.push_back(
                  {MachineId(1 + rng() % (next_machine + 1)), "", bytes});
            }
          }
          spec.input_bytes = static_cast<int64_t>(rng() % 1500) * kMiB;
          switch (rng() % 5) {
            case 0:
              spec.request.cpu_millis = static_cast<int64_t>(1 + rng() % 3000);
              break;
            case 1:
              spec.accelerator.milli = 500;
              break;
            default:
              break;
          }
          job.tasks.push_back(spec);
        }
        apply(job);
      }
      sync();
      for (int round = 0; round < 2; ++round) {
        run.now_us += static_cast<int64_t>(rng() % 3) * kSecond;
        ASSERT_THAT(run.Round().status(), IsOk());
      }
      ASSERT_THAT(run.FinishSomeRunning(rng, 4), IsOk());
      if (wave == 1) {
        apply(cluster::MachineRemoved{run.state().machines().begin()->first});
        add_machine(racks + 1);
      }
      run.now_us += static_cast<int64_t>(1 + rng() % 40) * kSecond;
      sync();
      ASSERT_THAT(run.Round().status(), IsOk());
    }
    actual.push_back(run.fingerprint);
  }
  EXPECT_EQ(actual, expected) << "now: " << absl::StrJoin(actual, ", ");
}

TEST(QuincyRegistryTest, VariantsAreRegisteredByName) {
  for (const char* name :
       {"quincy-qfp", "quincy-qf", "quincy-qp", "quincy-q", "quincy-qfpx"}) {
    auto policy = MakePolicy(name);
    ASSERT_THAT(policy, IsOk()) << name;
    EXPECT_EQ((*policy)->name(), name);
    EXPECT_TRUE((*policy)->time_dependent());
  }
}

TEST(PolicyRegistryTest, EveryPolicyIsRegisteredByName) {
  for (const char* name :
       {"load-spreading", "cpu-memory", "priority", "network-aware"}) {
    auto policy = MakePolicy(name);
    ASSERT_THAT(policy, IsOk()) << name;
    EXPECT_EQ((*policy)->name(), name);
    // They reserve room by shape, and refresh which shapes starve.
    EXPECT_TRUE((*policy)->time_dependent()) << name;
  }
  for (const char* spec :
       {"load-spreading:gang_first_after_s=0",
        "cpu-memory:gang_first_after_s=0", "priority:gang_first_after_s=0",
        "network-aware:gang_first_after_s=0"}) {
    auto policy = MakePolicy(spec);
    ASSERT_THAT(policy, IsOk()) << spec;
    EXPECT_FALSE((*policy)->time_dependent()) << spec;
  }
}

}  // namespace
}  // namespace flowsched::flow
