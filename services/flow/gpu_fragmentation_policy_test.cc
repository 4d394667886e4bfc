#include "services/flow/gpu_fragmentation_policy.h"

#include <cstdint>
#include <random>
#include <string>
#include <utility>
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
    GpuFragmentationPolicy fresh(params_);
    auto built = flow::testing::DescribeFreshBuild(fresh, state_, 1);
    ASSERT_THAT(built, IsOk());
    EXPECT_EQ(flow::testing::Describe(network_), *built);
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

// A network stored by a build before gpu-fgd was a profile keys its gates
// gpu-fgd-gate|<machine>: a fresh policy over it (a restarted graph
// manager) removes them at its first Refresh and builds what a fresh sync
// of the state builds.
TEST_F(GpuFragmentationPolicyTest, AFreshPolicyDropsGatesOfTheOldKey) {
  AddMachine(1, 1);
  AddMachine(2, 1);
  Submit(7, {Gpu(71, 0, 500), Gpu(72, 1, 0)});
  Sync();
  // The old build's gate on machine 1, with the arcs it had.
  const NodeId old_gate = builder_.EnsureAggregatorNode(
      NodeKind::kRack, NetworkBuilder::StableKey("gpu-fgd-gate|1"));
  ASSERT_THAT(builder_.SetOutArcs(
                  old_gate, {{builder_.FindMachineNode(MachineId(1)), 1, 0}}),
              IsOk());
  // As a restarted graph manager: the stored network, a new builder.
  FlowNetwork& restored = network_;
  NetworkBuilder restored_builder(restored);
  ASSERT_THAT(restored_builder.RestoreFromNetwork(), IsOk());
  ASSERT_NE(restored_builder.FindAggregatorNode(
                NodeKind::kRack, NetworkBuilder::StableKey("gpu-fgd-gate|1")),
            kNoNode);
  GpuFragmentationPolicy fresh;
  ASSERT_TRUE(fresh.refresh_owed());
  ASSERT_THAT(fresh.Refresh(state_, SyncContext{1}, restored_builder), IsOk());
  EXPECT_EQ(restored_builder.FindAggregatorNode(
                NodeKind::kRack, NetworkBuilder::StableKey("gpu-fgd-gate|1")),
            kNoNode);
  GpuFragmentationPolicy scratch;
  auto built = flow::testing::DescribeFreshBuild(scratch, state_, 1);
  ASSERT_THAT(built, IsOk());
  EXPECT_EQ(flow::testing::Describe(restored), *built);
}

// The networks gpu-fgd built on random clusters before it was a built-in
// profile (fingerprints taken once each term was rounded on its own, as a
// profile rounds its terms, and its gates were keyed as a profile's; the
// profile reproduced all 24), then with two fixes to what it shared with
// the old class, which changed 8 of them: a different-machines job's
// shape, whose ask covers its waiting tasks under one key, is priced again
// on every machine when its ask changes (the kept prices were the old
// ask's), and such a shape that took whole devices for a fraction reaches
// a machine only where its ask fits with that fraction too (a whole device
// of less capacity than the fraction fitted the ask, not the task). Machines
// with and without GPUs of three models (some shared at less than a whole
// device), tasks asking for CPU and memory, whole and fractional GPUs,
// acceptable and preferred models and labels, some jobs on different
// machines; random parameters (the exact delta and the score, with and
// without first fit, best fit and model affinity); synced eagerly or as
// the graph manager does, over rounds that place and finish tasks, with
// machines removed and added (every price again) and the workload growing
// past a third (rebuilt). Any change to a node, arc, capacity or cost
// changes a fingerprint.
TEST(GpuFragmentationPinTest, KeepsItsNetworkOnRandomClusters) {
  const std::vector<uint64_t> expected = {
      5770508642574860745ULL,  18027392164210085374ULL, 5348808533168982853ULL,
      16623733318919670081ULL, 1932727221353776839ULL,  17370719197351542893ULL,
      17677024200405930395ULL, 1606468956676966174ULL,  14897793155719551269ULL,
      13884604189819780725ULL, 8011476478273787598ULL,  15185751640451190955ULL,
      16475273596251520548ULL, 5148149917079384825ULL,  3159717299887349394ULL,
      15832207825977574513ULL, 13434548369654633503ULL, 4421317925747021766ULL,
      15967300180777616733ULL, 13183936569503137781ULL, 8937047245209521092ULL,
      3617764330339680039ULL,  17589324539594066142ULL, 9675027648270968209ULL};
  std::vector<uint64_t> actual;
  const std::vector<std::string> models = {"A10", "V100", "T4"};
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    std::mt19937_64 rng(seed);
    GpuFragmentationParams params;
    params.score_levels = std::vector<int64_t>{0, 10, 100}[rng() % 3];
    params.first_fit = static_cast<int64_t>(rng() % 2);
    params.best_fit = std::vector<double>{0, 0.5, 1, 2.5}[rng() % 4];
    params.model_affinity = std::vector<double>{0, 3, 10}[rng() % 3];
    params.workload_coverage = std::vector<double>{0.5, 0.95, 1}[rng() % 3];
    GpuFragmentationPolicy policy(params);
    testing::PinnedRun run(policy, /*deferred=*/seed % 2 == 0);
    const auto apply = [&](cluster::EventBody body) {
      ASSERT_THAT(run.Apply(body), IsOk());
    };
    const auto sync = [&]() { ASSERT_THAT(run.Sync(), IsOk()); };
    uint64_t next_machine = 1;
    const auto add_machine = [&]() {
      cluster::MachineAdded added{
          MachineId(next_machine++),
          absl::StrCat("r", rng() % 3),
          {static_cast<int64_t>(4000 + rng() % 60000),
           static_cast<int64_t>(8 + rng() % 120) * kGiB, 0},
          static_cast<uint32_t>(2 + rng() % 30),
          {{"zone", rng() % 2 ? "a" : "b"}},
          {}};
      if (rng() % 4 != 0) {
        added.accelerators.push_back({static_cast<uint32_t>(1 + rng() % 8),
                                      models[rng() % 3],
                                      rng() % 5 == 0 ? 500 : 1000, 0});
        if (rng() % 4 == 0) {
          added.accelerators.push_back({static_cast<uint32_t>(1 + rng() % 4),
                                        models[rng() % 3], 1000, 0});
        }
      }
      apply(added);
    };
    const int machines = 3 + static_cast<int>(rng() % 20);
    for (int m = 0; m < machines; ++m) add_machine();
    uint64_t next_task = 1;
    for (int wave = 0; wave < 4; ++wave) {
      const int jobs = 1 + static_cast<int>(rng() % 4);
      for (int j = 0; j < jobs; ++j) {
        cluster::JobSubmitted job{
            JobId(static_cast<uint64_t>(100 * wave + j + 1)), "j", 0, {}};
        job.different_machines = rng() % 6 == 0;
        const int n = 1 + static_cast<int>(rng() % 12);
        for (int t = 0; t < n; ++t) {
          cluster::TaskSpec spec;
          spec.id = TaskId(next_task++);
          spec.request.cpu_millis = static_cast<int64_t>(rng() % 8000);
          spec.request.memory_bytes = static_cast<int64_t>(rng() % 16) * kGiB;
          switch (rng() % 4) {
            case 0:
              spec.accelerator.whole = static_cast<uint32_t>(1 + rng() % 3);
              break;
            case 1:
            case 2:
              spec.accelerator.milli = static_cast<int64_t>(1 + rng() % 999);
              break;
            default:
              break;
          }
          if (!spec.accelerator.empty() && rng() % 4 == 0) {
            spec.accelerator.models = {models[rng() % 3], models[rng() % 3]};
          }
          if (!spec.accelerator.empty() && rng() % 3 == 0) {
            const std::string& preferred = models[rng() % 3];
            if (spec.accelerator.AcceptsModel(preferred)) {
              spec.accelerator.preferred_models = {preferred};
            }
          }
          if (rng() % 6 == 0) spec.required_labels = {{"zone", "a"}};
          job.tasks.push_back(spec);
        }
        apply(job);
      }
      sync();
      for (int round = 0; round < 2; ++round) {
        ASSERT_THAT(run.Round().status(), IsOk());
      }
      ASSERT_THAT(run.FinishSomeRunning(rng, 4), IsOk());
      if (wave == 1) {
        // A machine goes and another comes: every rank moves.
        apply(cluster::MachineRemoved{run.state().machines().begin()->first});
        add_machine();
      }
      run.now_us += 2'000'000;
      sync();
      ASSERT_THAT(run.Round().status(), IsOk());
    }
    actual.push_back(run.fingerprint);
  }
  EXPECT_EQ(actual, expected) << "now: " << absl::StrJoin(actual, ", ");
}

}  // namespace
}  // namespace flowsched::flow
