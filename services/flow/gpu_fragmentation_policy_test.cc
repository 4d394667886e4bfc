#include "services/flow/gpu_fragmentation_policy.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/cluster/resource_fit.h"
#include "services/common/byte_units.h"
#include "services/common/status_matchers.h"
#include "services/flow/policy_test_util.h"

namespace flowsched::flow {
namespace {

using cluster::ClusterEvent;
using ::flowsched::testing::IsOk;

// A cluster, its network under gpu-fgd, and rounds solved and applied.
class GpuCluster {
 public:
  explicit GpuCluster(GpuFragmentationParams params = {})
      : params_(params), policy_(params) {}
  void Apply(cluster::EventBody body) {
    ASSERT_THAT(state_.Apply(ClusterEvent{"e", 1, "t", body}, 1, changes_),
                IsOk());
  }
  void AddMachine(uint64_t id, uint32_t gpus, int64_t cpu = 64'000,
                  const std::string& model = "G") {
    cluster::MachineAdded added{
        MachineId(id), "r", {cpu, 256 * kGiB, 0}, 64, {}, {}};
    if (gpus > 0) added.accelerators.push_back({.count = gpus, .model = model});
    Apply(added);
  }
  static cluster::TaskSpec Gpu(uint64_t id, uint32_t whole, int64_t milli,
                               int64_t cpu = 1000) {
    cluster::TaskSpec spec{.id = TaskId(id), .request = {cpu, kGiB, 0}};
    spec.accelerator.whole = whole;
    spec.accelerator.milli = milli;
    return spec;
  }
  void Submit(uint64_t job, std::vector<cluster::TaskSpec> tasks) {
    Apply(cluster::JobSubmitted{JobId(job), "j", 0, std::move(tasks)});
  }
  void Sync() {
    ASSERT_THAT(policy_.Sync(changes_, state_, SyncContext{1}, builder_),
                IsOk());
    changes_.Clear();
    ASSERT_EQ(network_.total_supply(), 0);
  }
  // Solves (the reference solver, certificate checked), applies with
  // ClusterState::Place (which refuses anything that does not fit) and
  // re-syncs; returns how many tasks were placed.
  int Round() {
    auto round = flow::testing::SolveNetwork(network_);
    EXPECT_THAT(round, IsOk());
    if (!round.ok()) return -1;
    auto applied = flow::testing::ApplyRound(*round, state_, 2, changes_);
    EXPECT_THAT(applied, IsOk());
    Sync();
    return applied.ok() ? *applied : -1;
  }
  MachineId MachineOf(uint64_t task) {
    return state_.FindTask(TaskId(task))->machine;
  }

 protected:
  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
  FlowNetwork network_;
  NetworkBuilder builder_{network_};
  GpuFragmentationParams params_;
  GpuFragmentationPolicy policy_;
};

class GpuFragmentationPolicyTest : public ::testing::Test,
                                   protected GpuCluster {};

// Machine 1's only GPU is half used, machine 2's is free, machine 3 runs a
// whole-GPU task: the expected workload is half and whole GPUs. A new
// half-GPU task on machine 2 would leave half a GPU that whole-GPU tasks
// cannot use; on machine 1 it fills the hole, so fragmentation falls. The
// flow puts it there although machine 2 is the emptier one.
TEST_F(GpuFragmentationPolicyTest, FillsTheHoleThatAWholeGpuTaskCannotUse) {
  AddMachine(1, 1);
  AddMachine(2, 1);
  AddMachine(3, 1);
  Submit(1, {Gpu(1, 1, 0), Gpu(2, 0, 500)});
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(3), 1, changes_), IsOk());
  ASSERT_THAT(state_.Place(TaskId(2), MachineId(1), 1, changes_), IsOk());
  Sync();
  Submit(2, {Gpu(3, 0, 500)});
  Sync();
  ASSERT_EQ(Round(), 1);
  EXPECT_EQ(MachineOf(3), MachineId(1));
}

// Whole-GPU tasks only, so no placement fragments anything and every
// machine scores the same: first fit takes machine 1 (the lowest id), the
// most-allocated term machine 2, which already runs two of its four GPUs.
TEST(GpuFragmentationBestFitTest, TheFullerMachineWinsEqualScores) {
  for (const double best_fit : {0.0, 2.0}) {
    SCOPED_TRACE(best_fit);
    struct Cluster : GpuCluster {
      using GpuCluster::GpuCluster;
      void Run() {
        AddMachine(1, 4);
        AddMachine(2, 4);
        Submit(1, {Gpu(1, 1, 0), Gpu(2, 1, 0)});
        ASSERT_THAT(state_.Place(TaskId(1), MachineId(2), 1, changes_), IsOk());
        ASSERT_THAT(state_.Place(TaskId(2), MachineId(2), 1, changes_), IsOk());
        Sync();
        Submit(2, {Gpu(3, 1, 0)});
        Sync();
        ASSERT_EQ(Round(), 1);
      }
    } cluster(GpuFragmentationParams{.best_fit = best_fit});
    cluster.Run();
    EXPECT_EQ(cluster.MachineOf(3), MachineId(best_fit > 0 ? 2 : 1));
  }
}

// Two equal machines but for their GPU model: a task that prefers H goes to
// machine 2 although first fit would take machine 1; without the term (or
// without a preference) machine 1.
TEST(GpuFragmentationModelAffinityTest, APreferredModelWinsEqualScores) {
  for (const double affinity : {0.0, 10.0}) {
    for (const bool prefers : {false, true}) {
      SCOPED_TRACE(::testing::Message() << affinity << " " << prefers);
      struct Cluster : GpuCluster {
        using GpuCluster::GpuCluster;
        void Run(bool prefers_h) {
          AddMachine(1, 2, 64'000, "G");
          AddMachine(2, 2, 64'000, "H");
          cluster::TaskSpec task = Gpu(1, 1, 0);
          if (prefers_h) task.accelerator.preferred_models = {"H"};
          Submit(1, {task});
          Sync();
          ASSERT_EQ(Round(), 1);
        }
      } cluster(
          GpuFragmentationParams{.best_fit = 0, .model_affinity = affinity});
      cluster.Run(prefers);
      EXPECT_EQ(cluster.MachineOf(1),
                MachineId(affinity > 0 && prefers ? 2 : 1));
    }
  }
}

TEST_F(GpuFragmentationPolicyTest, PlacesOnlyWhereTheTaskFits) {
  AddMachine(1, 0);  // no GPU
  AddMachine(2, 2);
  Submit(1, {Gpu(1, 2, 0), Gpu(2, 1, 0)});
  Sync();
  EXPECT_EQ(Round(), 1);  // machine 2 takes one task this round
  EXPECT_EQ(Round(), 0);  // the other no longer fits anywhere
  int running = 0;
  for (uint64_t task : {1, 2}) {
    if (state_.FindTask(TaskId(task))->running()) {
      ++running;
      EXPECT_EQ(MachineOf(task), MachineId(2));
    }
  }
  EXPECT_EQ(running, 1);
}

// Random GPU clusters and asks (whole, fractional, CPU-only; some too big
// for any machine): every round's flow is applied by Place without a
// refusal, nothing is ever over capacity, and rounds go on until no waiting
// task fits any machine.
class RandomGpuCluster : public GpuCluster {
 public:
  using GpuCluster::GpuCluster;
  // A cluster of 2-7 machines with 0-4 GPUs and 5-44 tasks, each CPU-only,
  // 1-4 whole GPUs or a fraction of one.
  void Build(uint32_t seed) {
    std::mt19937 rng(seed);
    const uint64_t machines = 2 + rng() % 6;
    for (uint64_t m = 1; m <= machines; ++m) {
      AddMachine(m, static_cast<uint32_t>(rng() % 5), 8000 + rng() % 24'000);
    }
    const uint64_t tasks = 5 + rng() % 40;
    std::vector<cluster::TaskSpec> specs;
    for (uint64_t t = 1; t <= tasks; ++t) {
      const uint32_t kind = rng() % 4;
      const int64_t cpu = 500 + static_cast<int64_t>(rng() % 6000);
      specs.push_back(kind == 0   ? Gpu(t, 0, 0, cpu)
                      : kind == 1 ? Gpu(t, 1 + rng() % 4, 0, cpu)
                                  : Gpu(t, 0, 100 + rng() % 900, cpu));
    }
    Submit(1, specs);
    Sync();
  }
  void ExpectWithinCapacity() const {
    for (const auto& [id, machine] : state_.machines()) {
      EXPECT_TRUE(cluster::WithinCapacity(machine)) << id.value();
    }
  }
  // A fresh policy builds the network the incremental Syncs (with their
  // cached prices) made.
  void ExpectEqualToAFreshBuild() const {
    FlowNetwork scratch;
    NetworkBuilder scratch_builder(scratch);
    GpuFragmentationPolicy fresh(params_);
    cluster::ChangeSet everything;
    for (const auto& [id, job] : state_.jobs()) everything.jobs.insert(id);
    for (const auto& [id, m] : state_.machines()) {
      everything.machines.insert(id);
    }
    for (const auto& [id, task] : state_.tasks()) everything.tasks.insert(id);
    ASSERT_THAT(fresh.Sync(everything, state_, SyncContext{1}, scratch_builder),
                IsOk());
    EXPECT_EQ(flow::testing::Describe(network_),
              flow::testing::Describe(scratch));
  }
  void ExpectNoWaitingTaskFits() const {
    for (const auto& [id, task] : state_.tasks()) {
      if (task.running()) continue;
      for (const auto& [mid, machine] : state_.machines()) {
        EXPECT_FALSE(cluster::FitTask(machine, task.spec).fits())
            << "task " << id.value() << " waits but fits " << mid.value();
      }
    }
  }
};

// Random GPU clusters and asks (whole, fractional, CPU-only; some too big
// for any machine): every round's flow is applied by Place without a
// refusal, nothing is ever over capacity, and rounds go on until no waiting
// task fits any machine. After every round the network equals a fresh
// policy's build of the same state (the cached prices are never stale).
TEST(GpuFragmentationPolicyRandomTest, NeverOvercommitsAndFillsUp) {
  // The default prices, exact deltas (negative costs too), and the score
  // without the first-fit tie-break.
  const GpuFragmentationParams variants[] = {
      {}, {.score_levels = 0}, {.score_levels = 100, .first_fit = 0}};
  for (uint32_t seed = 1; seed <= 90; ++seed) {
    SCOPED_TRACE(seed);
    RandomGpuCluster cluster(variants[seed % 3]);
    cluster.Build(seed);
    int rounds = 0;
    while (cluster.Round() > 0) {
      ASSERT_LT(++rounds, 200);
      cluster.ExpectWithinCapacity();
      cluster.ExpectEqualToAFreshBuild();
    }
    cluster.ExpectNoWaitingTaskFits();
  }
}

}  // namespace
}  // namespace flowsched::flow
