#include "services/flow/cpu_memory_policy.h"

#include <map>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/byte_units.h"
#include "services/common/status_matchers.h"
#include "services/flow/constraints.h"
#include "services/flow/policy_test_util.h"

namespace flowsched::flow {
namespace {

using cluster::ClusterEvent;
using cluster::Resources;
using ::flowsched::testing::IsOk;

class CpuMemoryPolicyTest : public ::testing::Test {
 protected:
  void Apply(cluster::EventBody body, int64_t now_us = 1) {
    ASSERT_THAT(
        state_.Apply(ClusterEvent{"e", now_us, "t", body}, now_us, changes_),
        IsOk());
  }
  void AddMachine(uint64_t id, int64_t cpu, int64_t mem_gib, uint32_t slots,
                  std::map<std::string, std::string> labels = {}) {
    Apply(cluster::MachineAdded{
        MachineId(id), "r", {cpu, mem_gib * kGiB, 0}, slots, labels});
  }
  static cluster::TaskSpec Task(uint64_t id, int64_t cpu, int64_t mem_gib) {
    return {.id = TaskId(id), .request = {cpu, mem_gib * kGiB, 0}};
  }
  void Submit(uint64_t job, std::vector<cluster::TaskSpec> tasks,
              bool different_machines = false) {
    cluster::JobSubmitted submitted{JobId(job), "j", 0, std::move(tasks)};
    submitted.different_machines = different_machines;
    Apply(submitted);
  }
  void Sync() {
    ASSERT_THAT(policy_.Sync(changes_, state_, SyncContext{1}, builder_),
                IsOk());
    changes_.Clear();
    ASSERT_EQ(network_.total_supply(), 0);
  }
  NodeId Class(uint64_t task) {
    return builder_.FindAggregatorNode(
        NodeKind::kEquivalenceClass,
        NetworkBuilder::StableKey(CpuMemoryPolicy::ClassText(
            *state_.FindTask(TaskId(task)), state_)));
  }
  NodeId M(uint64_t id) { return builder_.FindMachineNode(MachineId(id)); }
  // Solves, applies (Place must accept every decision) and re-syncs.
  flow::testing::SolvedRound Round() {
    auto round = flow::testing::SolveNetwork(network_);
    EXPECT_THAT(round, IsOk());
    if (!round.ok()) return {};
    EXPECT_THAT(flow::testing::ApplyRound(*round, state_, 2, changes_), IsOk());
    Sync();
    return *round;
  }

  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
  FlowNetwork network_;
  NetworkBuilder builder_{network_};
  CpuMemoryPolicy policy_;
};

// Two 4-core machines. Class A (1 core) has 3 waiting tasks, class B (2
// cores) 2. Each fits either machine alone, but A's 3 and B's 2 together
// need 7 cores of 8 and would overcommit a machine if both classes could
// fill it. Reservation: m1 (rotation 0) serves A first: 3 tasks, 1 core
// left, none for B; m2 (rotation 1) serves B first: 2 tasks, nothing left.
// Costs (k-th task, 1000 * max(cpu, memory) utilisation): A on m1: 250,
// 500, 750; B on m2: 500, 1000.
TEST_F(CpuMemoryPolicyTest, ReservationKeepsClassesFromJointlyOvercommitting) {
  AddMachine(1, 4000, 16, 8);
  AddMachine(2, 4000, 16, 8);
  Submit(1, {Task(1, 1000, 1), Task(2, 1000, 1), Task(3, 1000, 1),
             Task(4, 2000, 1), Task(5, 2000, 1)});
  Sync();
  const NodeId a = Class(1);
  const NodeId b = Class(4);
  ASSERT_NE(a, b);
  auto a_m1 = network_.FindArc(a, M(1));
  ASSERT_TRUE(a_m1.has_value());
  EXPECT_EQ(a_m1->capacity, 1);
  EXPECT_EQ(a_m1->cost, 250);
  EXPECT_EQ(std::vector<ArcSegment>(a_m1->extra_segments.begin(),
                                    a_m1->extra_segments.end()),
            (std::vector<ArcSegment>{{1, 500}, {1, 750}}));
  EXPECT_FALSE(network_.FindArc(a, M(2)).has_value());
  EXPECT_FALSE(network_.FindArc(b, M(1)).has_value());
  auto b_m2 = network_.FindArc(b, M(2));
  ASSERT_TRUE(b_m2.has_value());
  EXPECT_EQ(b_m2->cost, 500);
  ASSERT_EQ(b_m2->extra_segments.size(), 1u);
  EXPECT_EQ(b_m2->extra_segments[0], (ArcSegment{1, 1000}));

  auto round = Round();
  EXPECT_EQ(round.total_cost, 250 + 500 + 750 + 500 + 1000);
  EXPECT_EQ(state_.FindMachine(MachineId(1))->allocated.cpu_millis, 3000);
  EXPECT_EQ(state_.FindMachine(MachineId(2))->allocated.cpu_millis, 4000);
  // The classes are gone with their waiting tasks.
  EXPECT_TRUE(builder_.AggregatorKeys(NodeKind::kEquivalenceClass).empty());
}

// The cluster above with B a gang submitted 30 s before A. At first the
// rotation gives m1 to A and m2 to B. Once B has waited 60 s (the default
// gang_first_after_s), a Refresh with no change but the clock offers B every
// machine first: B reserves both, A none.
TEST_F(CpuMemoryPolicyTest, AWaitingGangIsOfferedEveryMachineFirst) {
  constexpr int64_t kSecondUs = 1'000'000;
  AddMachine(1, 4000, 16, 8);
  AddMachine(2, 4000, 16, 8);
  cluster::JobSubmitted gang{
      JobId(2), "g", 0, {Task(4, 2000, 1), Task(5, 2000, 1)}};
  gang.min_members = 2;
  Apply(gang);
  Apply(cluster::JobSubmitted{JobId(1),
                              "j",
                              0,
                              {Task(1, 1000, 1), Task(2, 1000, 1),
                               Task(3, 1000, 1)}},
        30 * kSecondUs);
  ASSERT_THAT(
      policy_.Sync(changes_, state_, SyncContext{30 * kSecondUs}, builder_),
      IsOk());
  changes_.Clear();
  ASSERT_TRUE(policy_.time_dependent());
  const NodeId a = Class(1);
  const NodeId b = Class(4);
  const auto arcs = [&]() {
    return std::vector<bool>{network_.FindArc(a, M(1)).has_value(),
                             network_.FindArc(a, M(2)).has_value(),
                             network_.FindArc(b, M(1)).has_value(),
                             network_.FindArc(b, M(2)).has_value()};
  };
  EXPECT_EQ(arcs(), (std::vector<bool>{true, false, false, true}));
  ASSERT_THAT(policy_.Refresh(state_, SyncContext{60 * kSecondUs}, builder_),
              IsOk());
  EXPECT_EQ(arcs(), (std::vector<bool>{true, false, false, true}));
  ASSERT_THAT(
      policy_.Refresh(state_, SyncContext{61 * kSecondUs + 1}, builder_),
      IsOk());
  EXPECT_EQ(arcs(), (std::vector<bool>{false, false, true, true}));
  // B's two tasks spread (each machine's second costs more); A waits.
  Round();
  EXPECT_EQ(state_.FindMachine(MachineId(1))->allocated.cpu_millis, 2000);
  EXPECT_EQ(state_.FindMachine(MachineId(2))->allocated.cpu_millis, 2000);
  EXPECT_FALSE(state_.FindTask(TaskId(1))->running());
}

// Utilisation balances across dimensions: m1 has memory to spare and m2
// CPU. A CPU-heavy task costs less on m2 and a memory-heavy one on m1.
TEST_F(CpuMemoryPolicyTest, CostIsTheLargerUtilisationAfterPlacement) {
  AddMachine(1, 2000, 16, 4);
  AddMachine(2, 8000, 4, 4);
  Submit(1, {Task(1, 1000, 1)});  // m1: max(0.5, 1/16) = 500; m2: 250
  Submit(2, {Task(2, 100, 2)});   // m1: max(0.05, 0.125) = 125; m2: 500
  Sync();
  EXPECT_EQ(network_.FindArc(Class(1), M(1))->cost, 500);
  EXPECT_EQ(network_.FindArc(Class(1), M(2))->cost, 250);
  EXPECT_EQ(network_.FindArc(Class(2), M(1))->cost, 125);
  EXPECT_EQ(network_.FindArc(Class(2), M(2))->cost, 500);
  auto round = Round();
  EXPECT_EQ(round.machine_of[1], 2u);
  EXPECT_EQ(round.machine_of[2], 1u);
}

TEST_F(CpuMemoryPolicyTest, TaskThatFitsNowhereWaitsAndRunningTasksStay) {
  AddMachine(1, 4000, 8, 4);
  Submit(1, {Task(1, 3000, 1), Task(2, 8000, 1)});
  Sync();
  EXPECT_FALSE(network_.FindArc(Class(2), M(1)).has_value());
  auto round = Round();
  EXPECT_EQ(round.machine_of[1], 1u);
  EXPECT_EQ(round.machine_of[2], 0u);
  // A smaller task arrives: 1000 cores are left, it fits; the running one
  // keeps its machine.
  Apply(cluster::TaskSubmitted{JobId(1), Task(3, 1000, 1)});
  Sync();
  round = Round();
  EXPECT_EQ(round.machine_of[1], 1u);
  EXPECT_EQ(round.machine_of[3], 1u);
  EXPECT_EQ(round.machine_of[2], 0u);
  // Nothing new: the next round changes nothing.
  round = Round();
  for (const TaskPlacement& p : round.placements) {
    EXPECT_EQ(p.machine_id, p.running_on) << "task " << p.task_id;
  }
}

TEST_F(CpuMemoryPolicyTest, RequiredSelectorLimitsArcsToMatchingMachines) {
  AddMachine(1, 4000, 8, 4, {{"zone", "a"}, {"gpu", "no"}});
  AddMachine(2, 4000, 8, 4, {{"zone", "b"}, {"gpu", "yes"}});
  cluster::TaskSpec picky = Task(1, 1000, 1);
  picky.required_labels = {{"gpu", "yes"}};
  cluster::TaskSpec likes_a = Task(2, 1000, 1);
  likes_a.preferred_labels = {{"zone", "a"}};
  cluster::TaskSpec impossible = Task(3, 1000, 1);
  impossible.required_labels = {{"zone", "c"}};
  Submit(1, {picky, likes_a, impossible});
  Sync();
  EXPECT_FALSE(network_.FindArc(Class(1), M(1)).has_value());
  EXPECT_TRUE(network_.FindArc(Class(1), M(2)).has_value());
  // Preferred: 250 - 500 on the matching machine, 250 elsewhere.
  EXPECT_EQ(network_.FindArc(Class(2), M(1))->cost, -250);
  EXPECT_EQ(network_.FindArc(Class(2), M(2))->cost, 250);
  auto round = Round();
  EXPECT_EQ(round.machine_of[1], 2u);
  EXPECT_EQ(round.machine_of[2], 1u);
  EXPECT_EQ(round.machine_of[3], 0u);
}

TEST_F(CpuMemoryPolicyTest, DifferentMachinesJobGetsOneTaskPerMachine) {
  AddMachine(1, 8000, 16, 8);
  AddMachine(2, 8000, 16, 8);
  AddMachine(3, 8000, 16, 8);
  Submit(
      1,
      {Task(1, 1000, 1), Task(2, 1000, 1), Task(3, 1000, 1), Task(4, 1000, 1)},
      /*different_machines=*/true);
  Sync();
  const NodeId dm = Class(1);
  EXPECT_EQ(Class(4), dm);  // one aggregator for the job
  for (uint64_t m = 1; m <= 3; ++m) {
    EXPECT_EQ(network_.FindArc(dm, M(m))->capacity, 1);
    EXPECT_TRUE(network_.FindArc(dm, M(m))->extra_segments.empty());
  }
  auto round = Round();
  std::map<uint64_t, int> per_machine;
  int waiting = 0;
  for (const auto& [task, machine] : round.machine_of) {
    if (machine == 0) {
      ++waiting;
    } else {
      ++per_machine[machine];
    }
  }
  EXPECT_EQ(waiting, 1);
  EXPECT_EQ(per_machine, (std::map<uint64_t, int>{{1, 1}, {2, 1}, {3, 1}}));
  // Every machine runs a task of the job: the aggregator has no arcs.
  for (uint64_t m = 1; m <= 3; ++m) {
    EXPECT_FALSE(network_.FindArc(dm, M(m)).has_value());
  }
}

TEST(ConstraintsTest, SelectorsMatchAndPrintCanonically) {
  EXPECT_TRUE(LabelsMatch({{"a", "1"}, {"b", "2"}}, {}));
  EXPECT_TRUE(LabelsMatch({{"a", "1"}, {"b", "2"}}, {{"b", "2"}}));
  EXPECT_FALSE(LabelsMatch({{"a", "1"}}, {{"a", "2"}}));
  EXPECT_FALSE(LabelsMatch({{"a", "1"}}, {{"c", "1"}}));
  EXPECT_EQ(SelectorText({{"b", "2"}, {"a", "x=y"}}), "a=x\\=y,b=2");
  // Escaping keeps distinct selectors distinct.
  EXPECT_NE(SelectorText({{"a", "1,b=2"}}),
            SelectorText({{"a", "1"}, {"b", "2"}}));
}

// Many random clusters and task mixes: every round's decisions apply
// through ClusterState::Place (which rejects any CPU or memory
// over-commit), no machine ever exceeds its capacity, different-machines
// jobs never share a machine, and once rounds stop placing, every waiting
// task fits no machine.
TEST(CpuMemoryInvariantTest,
     RandomClustersNeverOvercommitAndLeaveNoFitWaiting) {
  std::mt19937_64 rng(20240601);
  const std::vector<Resources> shapes = {
      {500, 1 * kGiB, 0}, {1000, 2 * kGiB, 0}, {2000, 1 * kGiB, 0},
      {250, 6 * kGiB, 0}, {4000, 8 * kGiB, 0}, {3000, 3 * kGiB, 0},
      {0, 1 * kGiB, 0},   {7000, 1 * kGiB, 0}};
  for (int trial = 0; trial < 60; ++trial) {
    cluster::ClusterState state;
    cluster::ChangeSet changes;
    FlowNetwork network;
    NetworkBuilder builder(network);
    CpuMemoryPolicy policy;
    const auto apply = [&](cluster::EventBody body) {
      ASSERT_THAT(state.Apply(ClusterEvent{"e", 1, "t", body}, 1, changes),
                  IsOk());
    };
    const int machines = 1 + static_cast<int>(rng() % 6);
    for (int m = 1; m <= machines; ++m) {
      std::map<std::string, std::string> labels = {
          {"zone", rng() % 2 ? "a" : "b"}};
      apply(cluster::MachineAdded{
          MachineId(static_cast<uint64_t>(m)),
          "r",
          {static_cast<int64_t>(1000 + rng() % 8000),
           static_cast<int64_t>(1 + rng() % 16) * kGiB, 0},
          static_cast<uint32_t>(1 + rng() % 8),
          labels});
    }
    uint64_t next_task = 1;
    const int jobs = 1 + static_cast<int>(rng() % 5);
    for (int j = 1; j <= jobs; ++j) {
      cluster::JobSubmitted job{JobId(static_cast<uint64_t>(j)), "j", 0, {}};
      job.different_machines = rng() % 4 == 0;
      const int tasks = 1 + static_cast<int>(rng() % 8);
      for (int t = 0; t < tasks; ++t) {
        cluster::TaskSpec spec{.id = TaskId(next_task++)};
        spec.request = shapes[rng() % shapes.size()];
        if (rng() % 5 == 0) spec.required_labels = {{"zone", "a"}};
        if (rng() % 5 == 0) spec.preferred_labels = {{"zone", "b"}};
        // Different-machines jobs are homogeneous (as in the Google trace),
        // the case where the job aggregator is exact.
        if (job.different_machines && t > 0) {
          spec = cluster::TaskSpec{job.tasks[0]};
          spec.id = TaskId(next_task - 1);
        }
        job.tasks.push_back(spec);
      }
      apply(job);
    }
    int rounds = 0;
    for (; rounds < 50; ++rounds) {
      ASSERT_THAT(policy.Sync(changes, state, SyncContext{1}, builder), IsOk());
      changes.Clear();
      ASSERT_EQ(network.total_supply(), 0);
      auto round = flow::testing::SolveNetwork(network);
      ASSERT_THAT(round, IsOk()) << "trial " << trial;
      auto applied = flow::testing::ApplyRound(*round, state, 1, changes);
      ASSERT_THAT(applied, IsOk()) << "trial " << trial;
      for (const auto& [id, machine] : state.machines()) {
        ASSERT_LE(machine.allocated.cpu_millis, machine.capacity.cpu_millis);
        ASSERT_LE(machine.allocated.memory_bytes,
                  machine.capacity.memory_bytes);
        ASSERT_LE(machine.running.size(), machine.task_slots);
        for (const auto& [job_id, job] : state.jobs()) {
          if (!job.different_machines) continue;
          int of_job = 0;
          for (TaskId t : machine.running) of_job += job.tasks.contains(t);
          ASSERT_LE(of_job, 1) << "trial " << trial;
        }
      }
      if (*applied == 0) break;
    }
    ASSERT_LT(rounds, 50) << "trial " << trial << " never settled";
    for (const auto& [id, task] : state.tasks()) {
      if (task.running()) continue;
      for (const auto& [machine_id, machine] : state.machines()) {
        const bool fits = machine.free_slots() > 0 &&
                          machine.Fits(task.spec.request) &&
                          ConstraintsAdmit(task, machine, state);
        EXPECT_FALSE(fits) << "trial " << trial << ": task " << id
                           << " waits but fits machine " << machine_id
                           << " rounds " << rounds << " req "
                           << task.spec.request.cpu_millis << "/"
                           << task.spec.request.memory_bytes << " alloc "
                           << machine.allocated.cpu_millis << "/"
                           << machine.allocated.memory_bytes << " cap "
                           << machine.capacity.cpu_millis << "/"
                           << machine.capacity.memory_bytes << " slots "
                           << machine.free_slots() << " dm "
                           << state.FindJob(task.job)->different_machines;
      }
    }
  }
}

// A fresh policy over a restored network (a restart, maybe of an older
// build whose class keys differ) derives every waiting task's arcs again at
// its first sync, whatever that sync names.
TEST_F(CpuMemoryPolicyTest,
       AFreshPolicyReDerivesTheWaitingTasksOfARestoredNetwork) {
  AddMachine(1, 4000, 8, 4);
  Submit(1, {Task(11, 1000, 1), Task(12, 1000, 1)});
  Sync();
  const auto built = network_.SnapshotChanges();

  // Restored, then damaged as an older build's keys would leave it: the
  // waiting task's arc to its class is gone.
  FlowNetwork restored;
  for (const GraphChange& change : built)
    ASSERT_THAT(restored.Apply(change), IsOk());
  NetworkBuilder restored_builder(restored);
  ASSERT_THAT(restored_builder.RestoreFromNetwork(), IsOk());
  const NodeId task = restored_builder.FindTaskNode(TaskId(11));
  ASSERT_THAT(restored_builder.SetOutArcs(
                  task, {{restored_builder.FindJobNode(JobId(1)), 1,
                          CpuMemoryParams{}.unscheduled_cost}}),
              IsOk());

  CpuMemoryPolicy fresh;
  cluster::ChangeSet unrelated;
  unrelated.machines.insert(MachineId(1));
  ASSERT_THAT(fresh.Sync(unrelated, state_, SyncContext{1}, restored_builder),
              IsOk());
  EXPECT_EQ(restored.SnapshotChanges(), built);
}

}  // namespace
}  // namespace flowsched::flow
