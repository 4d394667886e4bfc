#include "services/flow/profile_policy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/cluster/resource_fit.h"
#include "services/common/byte_units.h"
#include "services/common/status_matchers.h"
#include "services/flow/constraints.h"
#include "services/flow/cpu_memory_policy.h"
#include "services/flow/policy_spec.h"
#include "services/flow/policy_test_util.h"

namespace flowsched::flow {
namespace {

using cluster::ClusterEvent;
using ::flowsched::testing::IsOk;
using ::testing::HasSubstr;

// A cluster, a network and a policy, with the helpers the tests share.
class ProfileFixture {
 public:
  explicit ProfileFixture(std::unique_ptr<SchedulingPolicy> policy)
      : policy_(std::move(policy)) {}

  void Apply(cluster::EventBody body, int64_t now_us = 1) {
    ASSERT_THAT(
        state_.Apply(ClusterEvent{"e", now_us, "t", body}, now_us, changes_),
        IsOk());
  }
  void AddMachine(uint64_t id, int64_t cpu, int64_t mem_gib, uint32_t slots,
                  std::map<std::string, std::string> labels = {},
                  std::vector<cluster::AcceleratorGroup> devices = {},
                  std::string rack = "r") {
    Apply(cluster::MachineAdded{MachineId(id),
                                std::move(rack),
                                {cpu, mem_gib * kGiB, 0},
                                slots,
                                std::move(labels),
                                std::move(devices)});
  }
  void Submit(uint64_t job, std::vector<cluster::TaskSpec> tasks,
              int32_t priority = 0) {
    cluster::JobSubmitted submitted{JobId(job), "j", 0, std::move(tasks)};
    submitted.priority = priority;
    Apply(submitted);
  }
  // As the graph manager syncs when `deferred_`: the reservations left to
  // the Refresh before the solve.
  void Sync() {
    const SyncContext context{.now_us = now_us_, .refresh_follows = deferred_};
    ASSERT_THAT(policy_->Sync(changes_, state_, context, builder_), IsOk());
    if (deferred_) {
      ASSERT_THAT(policy_->Refresh(state_, context, builder_), IsOk());
    }
    changes_.Clear();
    ASSERT_EQ(network_.total_supply(), 0);
  }
  // Solves, applies (Place must accept every decision: the one fit rule)
  // and re-syncs; returns how many tasks were placed.
  int Round() {
    auto round = flow::testing::SolveNetwork(network_);
    EXPECT_THAT(round, IsOk());
    if (!round.ok()) return 0;
    for (const TaskPlacement& p : round->placements) {
      if (p.running_on != 0 && p.machine_id != p.running_on) ++displaced_;
    }
    auto applied = flow::testing::ApplyRound(*round, state_, 2, changes_);
    EXPECT_THAT(applied, IsOk());
    Sync();
    return applied.ok() ? *applied : 0;
  }
  // Rounds until one places nothing (at most `limit`); returns the count.
  int Settle(int limit = 50) {
    int rounds = 0;
    while (rounds < limit && Round() > 0) ++rounds;
    return rounds;
  }
  uint64_t MachineOf(uint64_t task) const {
    return state_.FindTask(TaskId(task))->machine.value();
  }

  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
  FlowNetwork network_;
  NetworkBuilder builder_{network_};
  std::unique_ptr<SchedulingPolicy> policy_;
  bool deferred_ = false;
  int64_t now_us_ = 1;  // the clock Sync and Refresh see
  int displaced_ = 0;   // running tasks preempted or moved by Round
};

std::unique_ptr<SchedulingPolicy> Make(const std::string& spec) {
  auto policy = MakePolicy(spec);
  EXPECT_THAT(policy, IsOk()) << spec;
  return policy.ok() ? std::move(*policy) : nullptr;
}

// `f`'s network equals a fresh `spec` policy's build of its state.
void ExpectEqualToAFreshBuild(const std::string& spec,
                              const ProfileFixture& f) {
  std::unique_ptr<SchedulingPolicy> fresh = Make(spec);
  ASSERT_NE(fresh, nullptr);
  absl::StatusOr<std::vector<std::string>> built =
      flow::testing::DescribeFreshBuild(*fresh, f.state_, f.now_us_);
  ASSERT_THAT(built, IsOk());
  EXPECT_EQ(*built, flow::testing::Describe(f.network_));
}

cluster::TaskSpec Task(uint64_t id, int64_t cpu, int64_t mem_gib) {
  return {.id = TaskId(id), .request = {cpu, mem_gib * kGiB, 0}};
}

// A random cluster of machines (some without reported CPU or memory, some
// with GPUs of two models) and jobs, some tasks already running, the rest
// waiting with random asks (GPUs among them, some preferring a model) and
// preferred labels, or for a slot only.
void RandomCluster(std::mt19937_64& rng, ProfileFixture& f) {
  const int machines = 2 + static_cast<int>(rng() % 8);
  for (int m = 1; m <= machines; ++m) {
    const bool cpu_reported = rng() % 6 != 0;
    std::vector<cluster::AcceleratorGroup> devices;
    if (rng() % 2 == 0) {
      devices.push_back({static_cast<uint32_t>(1 + rng() % 4),
                         rng() % 2 == 0 ? "A10" : "V100", 1000, 0});
    }
    f.AddMachine(static_cast<uint64_t>(m),
                 cpu_reported ? static_cast<int64_t>(1000 + rng() % 15000) : 0,
                 static_cast<int64_t>(rng() % 64), 1 + rng() % 20,
                 {{"zone", rng() % 2 ? "a" : "b"}}, devices);
  }
  uint64_t next = 1;
  for (int wave = 0; wave < 2; ++wave) {
    const int jobs = 1 + static_cast<int>(rng() % 4);
    for (int j = 0; j < jobs; ++j) {
      std::vector<cluster::TaskSpec> tasks;
      const int n = 1 + static_cast<int>(rng() % 12);
      for (int t = 0; t < n; ++t) {
        cluster::TaskSpec spec =
            Task(next++, static_cast<int64_t>(rng() % 3000),
                 static_cast<int64_t>(rng() % 6));
        if (rng() % 3 == 0) spec.preferred_labels = {{"zone", "a"}};
        if (rng() % 4 == 0) spec.accelerator.milli = 250;
        if (rng() % 6 == 0) spec.accelerator.whole = 1;
        if (spec.accelerator.whole > 0) spec.accelerator.milli = 0;
        if (!spec.accelerator.empty() && rng() % 2 == 0) {
          spec.accelerator.preferred_models = {"V100"};
        }
        if (rng() % 5 == 0) spec = {.id = spec.id};  // a slot only
        tasks.push_back(spec);
      }
      f.Submit(next * 1000 + static_cast<uint64_t>(wave), tasks);
    }
    f.Sync();
    if (wave == 0) f.Round();
  }
}

// The cost cpu-memory gave the k-th task of a class on a machine before it
// was a profile: util_scale * the larger utilisation after k tasks (0 for
// an unreported dimension, capped at 1), rounded, minus the discount.
int64_t CpuMemoryCostBeforeProfiles(const cluster::Machine& machine,
                                    const RequestShape& shape, int64_t k,
                                    int64_t util_scale, int64_t discount) {
  double utilisation = 0;
  const auto dim = [&](int64_t cap, int64_t alloc, int64_t req) {
    if (cap <= 0) return;
    utilisation = std::max(utilisation,
                           (static_cast<double>(alloc) +
                            static_cast<double>(k) * static_cast<double>(req)) /
                               static_cast<double>(cap));
  };
  const cluster::Resources& request = shape.ask.request;
  dim(machine.capacity.cpu_millis, machine.allocated.cpu_millis,
      request.cpu_millis);
  dim(machine.capacity.memory_bytes, machine.allocated.memory_bytes,
      request.memory_bytes);
  const bool preferred =
      !shape.preferred.empty() && LabelsMatch(machine.labels, shape.preferred);
  return static_cast<int64_t>(std::llround(std::min(utilisation, 1.0) *
                                           static_cast<double>(util_scale))) -
         (preferred ? discount : 0);
}

// cpu-memory is a built-in profile now; on random clusters (GPU asks
// among them), synced eagerly or as the graph manager does (reservations
// deferred to the Refresh), every class arc has the pieces and costs it had
// before: one piece per task up to kMaxArcSegments + 1, the last taking the
// rest, the k-th priced as above.
TEST(ProfilePolicyTest, CpuMemoryKeepsItsCostsOnRandomClusters) {
  std::mt19937_64 rng(31);
  int arcs_checked = 0;
  for (int trial = 0; trial < 40; ++trial) {
    CpuMemoryParams params;
    params.util_scale = 1 + static_cast<int64_t>(rng() % 5000);
    params.preferred_discount = static_cast<int64_t>(rng() % 2000);
    ProfileFixture f(std::make_unique<CpuMemoryPolicy>(params));
    f.deferred_ = trial % 2 == 1;
    RandomCluster(rng, f);
    for (const RequestShape& shape : WaitingShapes(f.state_)) {
      const NodeId node = f.builder_.FindAggregatorNode(
          NodeKind::kEquivalenceClass, NetworkBuilder::StableKey(shape.key));
      ASSERT_NE(node, kNoNode);
      for (const auto& [id, machine] : f.state_.machines()) {
        const auto arc =
            f.network_.FindArc(node, f.builder_.FindMachineNode(id));
        if (!arc.has_value()) continue;
        ++arcs_checked;
        std::vector<std::pair<int64_t, int64_t>> pieces = {
            {arc->capacity, arc->cost}};
        for (const ArcSegment& s : arc->extra_segments) {
          pieces.emplace_back(s.capacity, s.cost);
        }
        int64_t n = 0;
        for (const auto& piece : pieces) n += piece.first;
        ASSERT_EQ(static_cast<int64_t>(pieces.size()),
                  std::min<int64_t>(n, kMaxArcSegments + 1));
        for (size_t i = 0; i < pieces.size(); ++i) {
          const auto k = static_cast<int64_t>(i) + 1;
          EXPECT_EQ(pieces[i].first, i + 1 < pieces.size() ? 1 : n - k + 1);
          EXPECT_EQ(pieces[i].second, CpuMemoryCostBeforeProfiles(
                                          machine, shape, k, params.util_scale,
                                          params.preferred_discount))
              << "trial " << trial << " machine " << id << " k " << k;
        }
      }
    }
  }
  EXPECT_GT(arcs_checked, 100);
}

// The built-in profiles are their terms and filters: the same network,
// node for node and arc for arc, as the spec of those terms (cpu-memory
// is the default profile).
TEST(ProfilePolicyTest, BuiltInProfilesAreTheProfilesOfTheirTerms) {
  const std::pair<const char*, const char*> pairs[] = {
      {"cpu-memory", "profile"},
      {"load-spreading",
       "profile:spread=0,preferred_labels=0,tasks=10,pool_slot_tasks=1,"
       "room_pool=1,shape_machines_per_task=4,min_shape_machines=16"},
      {"gpu-fgd",
       "profile:spread=0,preferred_labels=0,gate=1,fragmentation=1000000,"
       "pack=15000,model_affinity=100000,first_fit=10000,"
       "unscheduled_cost=100000000,preemption_cost=100000000,"
       "gang_first_after_s=0"},
      {"quincy-qfp",
       "profile:spread=0,preferred_labels=0,quincy=1,preemptive=1"},
      {"quincy-qf", "profile:spread=0,preferred_labels=0,quincy=1"},
      {"quincy-qp",
       "profile:spread=0,preferred_labels=0,quincy=1,fair=0,preemptive=1"},
      {"quincy-q", "profile:spread=0,preferred_labels=0,quincy=1,fair=0"},
      {"quincy-qfpx",
       "profile:spread=0,preferred_labels=0,quincy=1,preemptive=1,xi=20"}};
  for (const auto& [built_in, spec] : pairs) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      std::mt19937_64 a(seed);
      std::mt19937_64 b(seed);
      ProfileFixture profile(Make(spec));
      ProfileFixture named(Make(built_in));
      RandomCluster(a, profile);
      RandomCluster(b, named);
      EXPECT_EQ(flow::testing::Describe(profile.network_),
                flow::testing::Describe(named.network_))
          << built_in << ", seed " << seed;
    }
  }
}

// The pool and the class each offer the machine up to the per-machine task
// limit, and the machine's arc to the sink keeps the limit for both: 4
// slots, a limit of 3, four slot-only tasks and a CPU task that fits.
TEST(ProfilePolicyTest, ThePoolKeepsTheTaskLimit) {
  ProfileFixture f(
      Make("profile:tasks=10,pool_slot_tasks=1,"
           "max_tasks_per_machine=3"));
  f.AddMachine(1, 4000, 8, 4);
  f.Submit(1, {{.id = TaskId(1)},
               {.id = TaskId(2)},
               {.id = TaskId(3)},
               {.id = TaskId(4)},
               Task(5, 1000, 1)});
  f.Sync();
  const NodeId pool = f.builder_.cluster_aggregator();
  ASSERT_NE(pool, kNoNode);
  const NodeId m1 = f.builder_.FindMachineNode(MachineId(1));
  const auto open_pieces = [&](NodeId from) {
    const auto arc = f.network_.FindArc(from, m1);
    if (!arc.has_value()) return int64_t{0};
    int64_t open = arc->capacity;
    for (const ArcSegment& piece : arc->extra_segments) open += piece.capacity;
    return open;
  };
  EXPECT_EQ(open_pieces(pool), 3);
  const NodeId cpu_class = f.builder_.FindAggregatorNode(
      NodeKind::kEquivalenceClass,
      NetworkBuilder::StableKey(
          ShapeKey(*f.state_.FindTask(TaskId(5)), f.state_)));
  ASSERT_NE(cpu_class, kNoNode);
  EXPECT_EQ(open_pieces(cpu_class), 1);
  EXPECT_EQ(f.network_.FindArc(m1, f.builder_.sink())->capacity, 3);
  f.Settle();
  EXPECT_EQ(f.state_.FindMachine(MachineId(1))->running.size(), 3u);
  // The slot-only task left waits in the pool, whose arc the limit closed.
  int pooled_waiting = 0;
  for (const auto& [id, task] : f.state_.tasks()) {
    if (task.running() || AsksForRoom(task, f.state_)) continue;
    ++pooled_waiting;
    EXPECT_TRUE(f.network_.FindArc(f.builder_.FindTaskNode(id), pool));
  }
  EXPECT_GE(pooled_waiting, 1);
  EXPECT_EQ(open_pieces(pool), 0);
  EXPECT_EQ(f.network_.FindArc(m1, f.builder_.sink())->capacity, 3);
}

// A machine already running more than the limit (placed before the limit
// was set) keeps its tasks: its arc to the sink carries them all, and
// nothing new is offered there.
TEST(ProfilePolicyTest, ThePoolNeverForcesOutTasksAboveTheLimit) {
  ProfileFixture f(
      Make("profile:tasks=10,pool_slot_tasks=1,"
           "max_tasks_per_machine=2"));
  f.AddMachine(1, 4000, 8, 6);
  f.Submit(1, {{.id = TaskId(1)},
               {.id = TaskId(2)},
               {.id = TaskId(3)},
               {.id = TaskId(4)}});
  for (uint64_t t = 1; t <= 3; ++t) {
    ASSERT_THAT(f.state_.Place(TaskId(t), MachineId(1), 1, f.changes_), IsOk());
  }
  f.Sync();
  const NodeId m1 = f.builder_.FindMachineNode(MachineId(1));
  EXPECT_EQ(f.network_.FindArc(m1, f.builder_.sink())->capacity, 3);
  f.Settle();
  const cluster::Machine& machine = *f.state_.FindMachine(MachineId(1));
  EXPECT_EQ(machine.running.size(), 3u);
  EXPECT_FALSE(f.state_.FindTask(TaskId(4))->running());
}

// Terms compose on the classes: the k-th task of a shape costs the tasks
// term's count plus the spread term's utilisation.
TEST(ProfilePolicyTest, TheTasksTermAddsToTheOthers) {
  ProfilePolicy policy(
      ProfileParams{.spread = 1000, .preferred_labels = 0, .tasks = 10});
  cluster::Machine machine;
  machine.capacity = {4000, 8 * kGiB, 0};
  machine.allocated = {1000, 0, 0};
  machine.task_slots = 8;
  machine.running = {TaskId(9)};
  RequestShape shape;
  shape.ask.request = {1000, 0, 0};
  // k = 2: one running + one new before it; CPU (1000 + 2000) / 4000.
  EXPECT_EQ(policy.PlacementCost(machine, shape, 2), 10 * 2 + 750);
  // A count past a raised slot limit stays within the solver's bound.
  ProfilePolicy dear(ProfileParams{.spread = 0,
                                   .preferred_labels = 0,
                                   .tasks = 1'000'000,
                                   .unscheduled_cost = 100'000'000});
  machine.task_slots = 5000;
  for (uint64_t t = 10; t < 5000; ++t) machine.running.insert(TaskId(t));
  EXPECT_EQ(dear.PlacementCost(machine, shape, 1), solver::kMaxArcCost);
}

// Two 4-core machines, m1 half full. Spreading puts a new task on the empty
// m2; packing on m1.
TEST(ProfilePolicyTest, PackFillsTheFullerMachineSpreadTheEmptier) {
  for (const auto& [spec, expected] :
       std::vector<std::pair<std::string, uint64_t>>{
           {"profile", 2}, {"profile:spread=0,pack=1000", 1}}) {
    ProfileFixture f(Make(spec));
    f.AddMachine(1, 4000, 16, 8);
    f.AddMachine(2, 4000, 16, 8);
    f.Sync();
    f.Apply(cluster::JobSubmitted{JobId(1), "j", 0, {Task(1, 2000, 8)}});
    f.Sync();
    ASSERT_THAT(f.state_.Place(TaskId(1), MachineId(1), 1, f.changes_), IsOk());
    f.Sync();
    f.Submit(2, {Task(2, 1000, 1)});
    f.Sync();
    f.Round();
    EXPECT_EQ(f.MachineOf(2), expected) << spec;
  }
}

// Packing puts a whole burst on the fullest machine while it has room:
// its arcs are one piece each (no term depends on k).
TEST(ProfilePolicyTest, PackingArcsAreOnePiece) {
  ProfileFixture f(Make("profile:spread=0,pack=1000"));
  f.AddMachine(1, 8000, 32, 8);
  f.AddMachine(2, 16000, 64, 8);
  f.Submit(1, {Task(1, 1000, 1), Task(2, 1000, 1), Task(3, 1000, 1)});
  f.Sync();
  f.network_.ForEachNode([&](NodeId id, const NodeData& data) {
    if (data.kind != NodeKind::kEquivalenceClass) return;
    f.network_.ForEachOutArc(id, [&](const ArcView& arc) {
      EXPECT_EQ(arc.capacity, 3);
      EXPECT_TRUE(arc.extra_segments.empty());
    });
  });
  f.Round();
  for (uint64_t t = 1; t <= 3; ++t) EXPECT_EQ(f.MachineOf(t), 1u) << t;
}

// Three machines of 8 slots, a limit of 3 tasks each, one task already
// running on m1: 20 waiting tasks settle at 8 placed, never more than 3 on
// a machine.
TEST(ProfilePolicyTest, TaskLimitCapsEveryMachine) {
  ProfileFixture f(Make("profile:max_tasks_per_machine=3"));
  for (uint64_t m = 1; m <= 3; ++m) f.AddMachine(m, 64000, 256, 8);
  f.Submit(1, {Task(1, 100, 1)});
  f.Sync();
  ASSERT_THAT(f.state_.Place(TaskId(1), MachineId(1), 1, f.changes_), IsOk());
  std::vector<cluster::TaskSpec> tasks;
  for (uint64_t t = 2; t <= 21; ++t) tasks.push_back(Task(t, 100, 1));
  f.Submit(2, tasks);
  f.Sync();
  EXPECT_LT(f.Settle(), 50);
  int running = 0;
  for (const auto& [id, machine] : f.state_.machines()) {
    EXPECT_LE(machine.running.size(), 3u) << id;
    running += static_cast<int>(machine.running.size());
  }
  EXPECT_EQ(running, 9);
}

// One machine with room for one of two equal tasks: with priority_step the
// task of the higher-priority job gets it, whichever was submitted first.
TEST(ProfilePolicyTest, PriorityGivesScarceRoomToTheHigherPriority) {
  for (const int32_t first_priority : {0, 7}) {
    ProfileFixture f(Make("profile:priority_step=1000"));
    f.AddMachine(1, 1000, 4, 4);
    f.Submit(1, {Task(1, 1000, 1)}, first_priority);
    f.Submit(2, {Task(2, 1000, 1)}, 7 - first_priority);
    f.Sync();
    f.Round();
    const uint64_t high = first_priority == 7 ? 1 : 2;
    EXPECT_EQ(f.MachineOf(high), 1u) << first_priority;
    EXPECT_EQ(f.MachineOf(3 - high), 0u) << first_priority;
  }
}

// m1 has A10s and comes first in every tie; a task preferring V100 goes to
// m2 once model_affinity weighs.
TEST(ProfilePolicyTest, ModelAffinityPrefersTheModel) {
  for (const auto& [spec, expected] :
       std::vector<std::pair<std::string, uint64_t>>{
           {"profile:model_affinity=400", 2}}) {
    ProfileFixture f(Make(spec));
    f.AddMachine(1, 8000, 32, 8, {}, {{4, "A10", 1000, 0}});
    f.AddMachine(2, 8000, 32, 8, {}, {{4, "V100", 1000, 0}});
    cluster::TaskSpec task = Task(1, 1000, 1);
    task.accelerator.whole = 1;
    task.accelerator.preferred_models = {"V100"};
    f.Submit(1, {task});
    f.Sync();
    f.Round();
    EXPECT_EQ(f.MachineOf(1), expected) << spec;
  }
}

// Two racks of one machine each, each with room for one task; two equal
// tasks, one reading its input in each rack. Without locality they are one
// shape and land wherever. With it they are two shapes (split by input
// rack); m1, in r2, comes first, where the rotation alone would offer its
// room to the shape reading in r1 (and m2's to the other: both across a
// rack, whatever the costs). Each machine offers its room to its rack's
// shape first, so both read locally.
TEST(ProfilePolicyTest, LocalityGivesARacksRoomToTheWorkThatReadsThere) {
  for (const auto& [spec, local] : std::vector<std::pair<std::string, bool>>{
           {"profile:locality=5000", true}, {"profile", false}}) {
    ProfileFixture f(Make(spec));
    f.Apply(cluster::MachineAdded{
        MachineId(1), "r2", {1000, 4 * kGiB, 0}, 4, {}, {}});
    f.Apply(cluster::MachineAdded{
        MachineId(2), "r1", {1000, 4 * kGiB, 0}, 4, {}, {}});
    cluster::TaskSpec in_r1 = Task(1, 1000, 1);
    in_r1.input = {{MachineId(0), "r1", 64 << 20}};
    cluster::TaskSpec in_r2 = Task(2, 1000, 1);
    in_r2.input = {{MachineId(0), "r2", 64 << 20}};
    f.Submit(1, {in_r1, in_r2});
    f.Sync();
    EXPECT_EQ(f.builder_.AggregatorKeys(NodeKind::kEquivalenceClass).size(),
              local ? 2u : 1u)
        << spec;
    f.Round();
    EXPECT_NE(f.MachineOf(1), 0u) << spec;
    EXPECT_NE(f.MachineOf(2), 0u) << spec;
    if (local) {
      EXPECT_EQ(f.MachineOf(1), 2u);
      EXPECT_EQ(f.MachineOf(2), 1u);
    }
  }
}

// A rack's own shapes are offered its room largest first: on one 4-core
// machine, the 4-core task reading there gets the room before three 1-core
// ones (whose shapes come first in key order), which would leave it
// nowhere to fit.
TEST(ProfilePolicyTest, LocalityOffersARacksRoomLargestFirst) {
  ProfileFixture f(Make("profile:locality=5000"));
  f.Apply(cluster::MachineAdded{
      MachineId(1), "r1", {4000, 16 * kGiB, 0}, 8, {}, {}});
  std::vector<cluster::TaskSpec> tasks;
  for (uint64_t t = 1; t <= 4; ++t) {
    cluster::TaskSpec task =
        t == 4 ? Task(t, 4000, 4) : Task(t, 1000, static_cast<int64_t>(t));
    task.input = {{MachineId(0), "r1", 64 << 20}};
    tasks.push_back(task);
  }
  f.Submit(1, tasks);
  f.Sync();
  EXPECT_EQ(f.Round(), 1);
  EXPECT_EQ(f.MachineOf(4), 1u);
}

// Two tasks read mostly in r1, whose one machine has room for one; the
// other also keeps a quarter of its input in r2. It goes to r2's machine,
// not to r3's (which has the lower id), since the term prices the share of
// the input a rack lacks.
TEST(ProfilePolicyTest, LocalityPrefersTheRackHoldingMoreOfTheInput) {
  ProfileFixture f(Make("profile:locality=5000"));
  f.Apply(cluster::MachineAdded{
      MachineId(1), "r1", {1000, 4 * kGiB, 0}, 4, {}, {}});
  f.Apply(cluster::MachineAdded{
      MachineId(2), "r3", {1000, 4 * kGiB, 0}, 4, {}, {}});
  f.Apply(cluster::MachineAdded{
      MachineId(3), "r2", {1000, 4 * kGiB, 0}, 4, {}, {}});
  cluster::TaskSpec all_in_r1 = Task(1, 1000, 1);
  all_in_r1.input = {{MachineId(0), "r1", 64 << 20}};
  cluster::TaskSpec mostly_in_r1 = Task(2, 999, 1);
  mostly_in_r1.input = {{MachineId(0), "r1", 48 << 20},
                        {MachineId(0), "r2", 16 << 20}};
  f.Submit(1, {all_in_r1, mostly_in_r1});
  f.Sync();
  f.Round();
  EXPECT_EQ(f.MachineOf(1), 1u);
  EXPECT_EQ(f.MachineOf(2), 3u);
}

// r1's machine has room for one of two tasks, r2's and r3's too. Both
// read all their input in r1; the larger, which r1 would offer its room to
// first, has a copy of it in r2 as well. The rack plan keeps the other in
// r1 and sends the larger to r2: neither reads across racks.
TEST(ProfilePolicyTest, LocalityLeavesARackToTheWorkThatLosesMostByLeaving) {
  ProfileFixture f(Make("profile:locality=5000"));
  for (uint64_t m = 1; m <= 3; ++m) {
    f.Apply(cluster::MachineAdded{
        MachineId(m), absl::StrCat("r", m), {2000, 8 * kGiB, 0}, 4, {}, {}});
  }
  cluster::TaskSpec copied = Task(1, 1500, 6);
  copied.input = {{MachineId(0), "r1", 64 << 20},
                  {MachineId(0), "r2", 64 << 20}};
  copied.input_bytes = 64 << 20;
  cluster::TaskSpec only_r1 = Task(2, 1000, 5);
  only_r1.input = {{MachineId(0), "r1", 64 << 20}};
  f.Submit(1, {copied, only_r1});
  f.Sync();
  EXPECT_EQ(f.Round(), 2);
  EXPECT_EQ(f.MachineOf(1), 2u);
  EXPECT_EQ(f.MachineOf(2), 1u);
}

// A waiting task reads from a machine that is not there yet: no rack holds
// its input. Once that machine joins (in r2), the task is indexed again
// under r2 although the change set names only the machine.
TEST(ProfilePolicyTest, LocalityFollowsTheRacksWhenMachinesComeAndGo) {
  ProfileFixture f(Make("profile:locality=5000"));
  f.Apply(cluster::MachineAdded{
      MachineId(1), "r1", {1000, 4 * kGiB, 0}, 4, {}, {}});
  cluster::TaskSpec task = Task(1, 2000, 1);  // fits no machine here
  task.input = {{MachineId(5), "", 64 << 20}};
  f.Submit(1, {task});
  f.Sync();
  const std::string plain = ShapeKey(*f.state_.FindTask(TaskId(1)), f.state_);
  const auto classes = [&] {
    return f.builder_.AggregatorKeys(NodeKind::kEquivalenceClass);
  };
  ASSERT_EQ(classes().size(), 1u);
  EXPECT_EQ(*classes().begin(), NetworkBuilder::StableKey(plain));
  f.Apply(cluster::MachineAdded{
      MachineId(5), "r2", {4000, 4 * kGiB, 0}, 4, {}, {}});
  f.Sync();
  ASSERT_EQ(classes().size(), 1u);
  EXPECT_EQ(*classes().begin(),
            NetworkBuilder::StableKey(absl::StrCat(plain, "|in=r2")));
  f.Round();
  EXPECT_EQ(f.MachineOf(1), 5u);
  // And back when it leaves: the task waits under its plain shape.
  f.Apply(cluster::MachineRemoved{MachineId(5)});
  f.Sync();
  ASSERT_EQ(classes().size(), 1u);
  EXPECT_EQ(*classes().begin(), NetworkBuilder::StableKey(plain));
}

// A different-machines job stays one shape whatever its tasks read, so it
// never has two tasks on a machine.
TEST(ProfilePolicyTest, LocalityNeverSplitsADifferentMachinesJob) {
  ProfileFixture f(Make("profile:locality=5000"));
  for (uint64_t m = 1; m <= 4; ++m) {
    f.Apply(cluster::MachineAdded{
        MachineId(m), m <= 2 ? "r1" : "r2", {8000, 32 * kGiB, 0}, 8, {}, {}});
  }
  std::vector<cluster::TaskSpec> tasks;
  for (uint64_t t = 1; t <= 4; ++t) {
    cluster::TaskSpec task = Task(t, 1000, 1);
    task.input = {{MachineId(0), t % 2 ? "r1" : "r2", 64 << 20}};
    tasks.push_back(task);
  }
  cluster::JobSubmitted job{JobId(1), "j", 0, tasks};
  job.different_machines = true;
  f.Apply(job);
  f.Sync();
  EXPECT_EQ(f.builder_.AggregatorKeys(NodeKind::kEquivalenceClass).size(), 1u);
  EXPECT_LT(f.Settle(), 50);
  for (const auto& [id, machine] : f.state_.machines()) {
    EXPECT_LE(machine.running.size(), 1u) << id;
  }
}

// A capped profile gives a shape max(min_shape_machines,
// shape_machines_per_task * waiting) machines, least loaded first: 2
// waiting tasks at 2 per task reach 4 of 12 machines, the 4 emptiest.
TEST(ProfilePolicyTest, ACappedShapeReachesItsShareOfTheEmptiestMachines) {
  ProfileFixture f(
      Make("profile:shape_machines_per_task=2,min_shape_machines=3"));
  for (uint64_t m = 1; m <= 12; ++m) f.AddMachine(m, 8000, 32, 8);
  // Machines 1-8 run a task each; 9-12 are empty.
  std::vector<cluster::TaskSpec> running;
  for (uint64_t t = 1; t <= 8; ++t) running.push_back(Task(t, 100, 1));
  f.Submit(1, running);
  f.Sync();
  for (uint64_t t = 1; t <= 8; ++t) {
    ASSERT_THAT(f.state_.Place(TaskId(t), MachineId(t), 1, f.changes_), IsOk());
  }
  f.Submit(2, {Task(11, 1000, 1), Task(12, 1000, 1)});
  f.Sync();
  std::vector<uint64_t> reached;
  f.network_.ForEachNode([&](NodeId id, const NodeData& data) {
    if (data.kind != NodeKind::kEquivalenceClass) return;
    f.network_.ForEachOutArc(id, [&](const ArcView& arc) {
      reached.push_back(f.network_.node(arc.dst).entity_id);
    });
  });
  std::sort(reached.begin(), reached.end());
  EXPECT_EQ(reached, (std::vector<uint64_t>{9, 10, 11, 12}));
  EXPECT_EQ(f.Round(), 2);
  EXPECT_GE(f.MachineOf(11), 9u);
  EXPECT_GE(f.MachineOf(12), 9u);
}

// The capped walk does not visit racks in a plan's order yet.
TEST(ProfilePolicyTest, TheCapIsRefusedWithLocality) {
  EXPECT_THAT(ParsePolicySpec("profile:shape_machines_per_task=2,locality=100")
                  .status()
                  .message(),
              HasSubstr("cannot be combined with locality"));
  EXPECT_THAT(ParsePolicySpec("profile:shape_machines_per_task=2"), IsOk());
}

// `flowsched explain` prints the price term by term: each weighted term
// by name, adding up to PlacementCost.
TEST(ProfilePolicyTest, ExplainCostNamesEachTermOfThePrice) {
  ProfilePolicy policy(ProfileParams{.spread = 1000, .tasks = 10});
  cluster::ClusterState state;
  cluster::Machine machine;
  machine.capacity = {4000, 8 * kGiB, 0};
  machine.allocated = {1000, 0, 0};
  machine.task_slots = 8;
  machine.running = {TaskId(9)};
  machine.labels = {{"zone", "a"}};
  RequestShape shape;
  shape.ask.request = {1000, 0, 0};
  shape.preferred = {{"zone", "a"}};
  const std::vector<ProfilePolicy::TermCost> costs =
      policy.ExplainCost(state, machine, shape, 2);
  std::vector<std::pair<std::string, int64_t>> named;
  int64_t total = 0;
  for (const auto& [name, cost] : costs) {
    named.emplace_back(std::string(name), cost);
    total += cost;
  }
  EXPECT_THAT(named,
              ::testing::ElementsAre(
                  std::pair<std::string, int64_t>{"spread", 750},
                  std::pair<std::string, int64_t>{"preferred_labels", -500},
                  std::pair<std::string, int64_t>{"tasks", 20}));
  EXPECT_EQ(total, policy.PlacementCost(machine, shape, 2));
}

// A higher-priority slot-only task displaces a running one on a full
// machine: a task that asks for CPU is preempted (it cannot move through
// the pool), and what runs still fits.
TEST(ProfilePolicyTest, PreemptionDisplacesAndFits) {
  ProfileFixture f(Make("priority"));
  f.AddMachine(1, 4000, 8, 1);
  f.Submit(1, {Task(1, 3000, 1)});
  f.Sync();
  f.Settle();
  ASSERT_EQ(f.MachineOf(1), 1u);
  f.Submit(2, {{.id = TaskId(2)}}, /*priority=*/5);
  f.Sync();
  f.Settle();
  EXPECT_EQ(f.MachineOf(2), 1u);
  EXPECT_FALSE(f.state_.FindTask(TaskId(1))->running());
  EXPECT_EQ(f.displaced_, 1);
  EXPECT_TRUE(cluster::WithinCapacity(*f.state_.FindMachine(MachineId(1))));
}

// Displacing keeps a machine's task count: allowed at the limit, not
// above it (where tasks placed before the limit run).
TEST(ProfilePolicyTest, PreemptionKeepsTheTaskLimit) {
  for (const int64_t limit : {3, 2}) {
    ProfileFixture f(Make(absl::StrCat(
        "profile:tasks=10,pool_slot_tasks=1,preemptive=1,priority_step=10000,"
        "preemption_cost=5000,max_tasks_per_machine=",
        limit)));
    f.AddMachine(1, 4000, 8, 4);
    f.Submit(1, {{.id = TaskId(1)}, {.id = TaskId(2)}, {.id = TaskId(3)}});
    for (uint64_t t = 1; t <= 3; ++t) {
      ASSERT_THAT(f.state_.Place(TaskId(t), MachineId(1), 1, f.changes_),
                  IsOk());
    }
    f.Submit(2, {{.id = TaskId(4)}}, /*priority=*/5);
    f.Sync();
    f.Settle();
    EXPECT_EQ(f.state_.FindMachine(MachineId(1))->running.size(), 3u)
        << "limit " << limit;
    EXPECT_EQ(f.state_.FindTask(TaskId(4))->running(), limit == 3)
        << "limit " << limit;
  }
}

// A fresh preemptive policy over a restored network derives every task's
// arcs once: a running task that asks for CPU loses an arc to the pool an
// older build gave it (it must not move by slots alone).
TEST(ProfilePolicyTest, AFreshPreemptivePolicyRederivesRunningTasks) {
  ProfileFixture f(Make("priority"));
  f.AddMachine(1, 4000, 8, 2);
  f.Submit(1, {Task(1, 1000, 1)});
  f.Sync();
  f.Settle();
  ASSERT_EQ(f.MachineOf(1), 1u);
  const NodeId task = f.builder_.FindTaskNode(TaskId(1));
  const NodeId pool = f.builder_.cluster_aggregator();
  ASSERT_THAT(f.network_.SetArc(task, pool, 1, 20'000), IsOk());
  // As a restart finds it: the stored network under a new builder.
  FlowNetwork& restored = f.network_;
  NetworkBuilder builder(restored);
  ASSERT_THAT(builder.RestoreFromNetwork(), IsOk());
  auto fresh = Make("priority");
  ASSERT_THAT(
      fresh->Sync(cluster::ChangeSet{}, f.state_, SyncContext{1}, builder),
      IsOk());
  EXPECT_FALSE(restored.FindArc(task, pool).has_value());
  EXPECT_TRUE(restored.FindArc(task, builder.FindMachineNode(MachineId(1))));
}

// Quincy's wait cost: room for one task of two alike goes to the one that
// has waited longer, whatever the ids (without the term, the solver's tie
// would pick the other).
TEST(ProfilePolicyTest, WaitGivesScarceRoomToTheLongestWaiting) {
  for (const int64_t wait : {0, 10}) {
    ProfileFixture f(Make(absl::StrCat("profile:wait=", wait)));
    f.AddMachine(1, 4000, 8, 4);
    // Task 2 (job 2) arrives at 1 s, task 1 (job 1) at 100 s; each asks
    // for 3 cores, so one fits.
    f.Apply(cluster::JobSubmitted{JobId(2), "j", 0, {Task(2, 3000, 1)}},
            1'000'000);
    f.Apply(cluster::JobSubmitted{JobId(1), "j", 0, {Task(1, 3000, 1)}},
            100'000'000);
    f.now_us_ = 200'000'000;
    f.Sync();
    f.Settle();
    EXPECT_EQ(f.state_.FindTask(TaskId(2))->running(), wait != 0)
        << "wait " << wait;
    EXPECT_NE(f.state_.FindTask(TaskId(1))->running(),
              f.state_.FindTask(TaskId(2))->running());
  }
}

// With wait, each Refresh re-prices a waiting task's arc to U by the whole
// seconds it has waited, up to the cap.
TEST(ProfilePolicyTest, RefreshRepricesWaitingByTheSecondsWaited) {
  ProfileFixture f(Make("profile:wait=10,wait_cap_s=60"));
  f.AddMachine(1, 1000, 8, 4);
  f.Submit(1, {Task(1, 3000, 1)});  // fits nowhere: waits
  f.Sync();
  const NodeId task = f.builder_.FindTaskNode(TaskId(1));
  const NodeId u = f.builder_.FindJobNode(JobId(1));
  EXPECT_EQ(f.network_.FindArc(task, u)->cost, 100'000);
  const auto refresh_at = [&](int64_t now_us) {
    ASSERT_THAT(f.policy_->Refresh(f.state_, SyncContext{now_us}, f.builder_),
                IsOk());
  };
  EXPECT_TRUE(f.policy_->time_dependent());
  refresh_at(31'500'000);  // 31.5 s after it arrived at 1 us
  EXPECT_EQ(f.network_.FindArc(task, u)->cost, 100'000 + 10 * 31);
  refresh_at(3'600'000'000);
  EXPECT_EQ(f.network_.FindArc(task, u)->cost, 100'000 + 10 * 60);
}

// A fresh policy's first Refresh over a restored network prices pooled
// tasks' waiting too (its Sync re-derives only the tasks in classes).
TEST(ProfilePolicyTest, AFreshPolicyPricesPooledWaitingAtItsFirstRefresh) {
  const std::string spec =
      "profile:spread=0,preferred_labels=0,tasks=10,pool_slot_tasks=1,"
      "wait=10";
  ProfileFixture f(Make(spec));
  f.Submit(1, {{.id = TaskId(1)}});  // no machine: it waits in the pool
  f.Sync();
  const NodeId task = f.builder_.FindTaskNode(TaskId(1));
  const NodeId u = f.builder_.FindJobNode(JobId(1));
  ASSERT_TRUE(f.network_.FindArc(task, f.builder_.cluster_aggregator()));
  ASSERT_EQ(f.network_.FindArc(task, u)->cost, 100'000);
  NetworkBuilder builder(f.network_);
  ASSERT_THAT(builder.RestoreFromNetwork(), IsOk());
  auto fresh = Make(spec);
  ASSERT_THAT(fresh->Refresh(f.state_, SyncContext{31'500'000}, builder),
              IsOk());
  EXPECT_EQ(f.network_.FindArc(task, u)->cost, 100'000 + 10 * 31);
}

// Preemption offers running tasks' slots through the pool.
TEST(ProfilePolicyTest, PreemptionNeedsThePool) {
  EXPECT_THAT(ParsePolicySpec("profile:preemptive=1").status().message(),
              HasSubstr("preemptive needs pool_slot_tasks"));
  EXPECT_THAT(ParsePolicySpec("profile:preemptive=1,pool_slot_tasks=1"),
              IsOk());
  EXPECT_THAT(ParsePolicySpec("profile:preemptive=1,pool_slot_tasks=1,"
                              "migration_cost=0")
                  .status()
                  .message(),
              HasSubstr("for nothing"));
  EXPECT_THAT(ParsePolicySpec("profile:preemptive=1,pool_slot_tasks=1,"
                              "wait=100,wait_cap_s=3600")
                  .status()
                  .message(),
              HasSubstr("equal priority"));
  EXPECT_THAT(ParsePolicySpec("profile:preemptive=1,pool_slot_tasks=1,"
                              "wait=10,wait_cap_s=3600"),
              IsOk());
}

// Quincy's network has its own locality, waiting and fairness: what only
// the classes, the pool or the gates have, and the class locality term, are
// refused by name; the other class terms (they price room tasks' arcs into
// machines), its own tunables and preemption (no pool needed) are accepted.
TEST(ProfilePolicyTest, QuincyRefusesWhatOnlyTheClassesHave) {
  const std::string quincy = "profile:quincy=1";
  for (const char* refused :
       {"locality=100", "wait=1", "priority_step=10", "max_tasks_per_machine=2",
        "pool_slot_tasks=1", "gate=1", "shape_machines_per_task=2",
        "network_room_by_use=1"}) {
    const std::string name(refused, std::string_view(refused).find('='));
    EXPECT_THAT(
        ParsePolicySpec(absl::StrCat(quincy, ",", refused)).status().message(),
        HasSubstr(absl::StrCat("set ", name, " to 0")))
        << refused;
  }
  auto policy = MakePolicy(
      absl::StrCat(quincy,
                   ",pack=5,tasks=1,preemptive=1,fair=0,omega=2,psi=3,xi=4,"
                   "admission_limit=5,theta_bits=2,omega_cap=5000"));
  ASSERT_THAT(policy, IsOk());
  EXPECT_TRUE((*policy)->time_dependent());
  // Waiting stops growing at omega_cap: the class price stays below it.
  EXPECT_THAT(ParsePolicySpec(absl::StrCat(quincy, ",omega_cap=1300,pack=300"))
                  .status()
                  .message(),
              HasSubstr("the dearest placement, spread + pack + "
                        "model_affinity + locality + fragmentation + "
                        "first_fit = 1300, must be below omega_cap (1300)"));
  EXPECT_THAT(ParsePolicySpec(absl::StrCat(quincy, ",omega_cap=1301,pack=300")),
              IsOk());
  // What only the classes read, away from its default, would be ignored.
  for (const char* ignored :
       {"unscheduled_cost=5000", "preemption_cost=1", "migration_cost=1",
        "max_priority=3", "wait_cap_s=10", "min_shape_machines=2",
        "gang_first_after_s=0"}) {
    EXPECT_THAT(
        ParsePolicySpec(absl::StrCat(quincy, ",", ignored)).status().message(),
        HasSubstr("does not apply with quincy=1"))
        << ignored;
  }
  // And Quincy's own tunables without quincy.
  for (const char* ignored :
       {"fair=0", "admission_limit=2", "omega=1", "psi=2", "xi=20",
        "delta_computer=0.5", "delta_rack=0.5", "max_preferences=3",
        "omega_cap=5000", "stay_bonus=0", "theta_step_us=5000",
        "theta_bits=1"}) {
    const std::string name(ignored, std::string_view(ignored).find('='));
    EXPECT_THAT(
        ParsePolicySpec(absl::StrCat("profile:", ignored)).status().message(),
        HasSubstr(absl::StrCat(name, " applies only with quincy=1")))
        << ignored;
  }
}

// Quincy's network composes with the class terms: the arcs by which a
// task asking for room enters machines carry spread's price and preferred
// labels' discount (the defaults), where quincy-qfp's cost nothing. Machine
// 1 is half used, 2 is in zone a: task 3 prefers zone a and goes there,
// and the network equals a fresh build.
TEST(ProfilePolicyTest, QuincyArcsIntoMachinesCarryTheClassTerms) {
  const auto class_costs_into = [](const ProfileFixture& f, uint64_t m) {
    const NodeId machine = f.builder_.FindMachineNode(MachineId(m));
    std::vector<int64_t> costs;
    f.network_.ForEachNode([&](NodeId id, const NodeData& d) {
      if (d.kind != NodeKind::kEquivalenceClass) return;
      f.network_.ForEachOutArc(id, [&](const ArcView& arc) {
        if (arc.dst == machine) costs.push_back(arc.cost);
      });
    });
    std::sort(costs.begin(), costs.end());
    return costs;
  };
  for (const std::string spec :
       {"profile:quincy=1,preemptive=1",
        "profile:quincy=1,preemptive=1,spread=0,preferred_labels=0"}) {
    SCOPED_TRACE(spec);
    const bool priced = spec == "profile:quincy=1,preemptive=1";
    ProfileFixture f(Make(spec));
    f.AddMachine(1, 4000, 8, 4);
    f.AddMachine(2, 4000, 8, 4, {{"zone", "a"}});
    f.AddMachine(3, 4000, 8, 4);
    f.Submit(1, {Task(1, 2000, 0)});
    ASSERT_THAT(f.state_.Place(TaskId(1), MachineId(1), 1, f.changes_), IsOk());
    cluster::TaskSpec zoned = Task(3, 1000, 0);
    zoned.preferred_labels = {{"zone", "a"}};
    f.Submit(2, {Task(2, 1000, 0), zoned});
    f.Sync();
    // Each shape reserves on the two least loaded machines (RoomRoutes: one
    // by need, one more from the room left): spread 1000 * 1000 / 4000 on
    // each, less 500 for task 3's shape on machine 2.
    EXPECT_TRUE(class_costs_into(f, 1).empty());
    if (priced) {
      EXPECT_EQ(class_costs_into(f, 2), (std::vector<int64_t>{-250, 250}));
      EXPECT_EQ(class_costs_into(f, 3), (std::vector<int64_t>{250, 250}));
    } else {
      EXPECT_EQ(class_costs_into(f, 2), (std::vector<int64_t>{0, 0}));
      EXPECT_EQ(class_costs_into(f, 3), (std::vector<int64_t>{0, 0}));
    }
    f.Settle();
    if (priced) {
      EXPECT_EQ(f.MachineOf(3), 2u);
    }
    EXPECT_EQ(f.MachineOf(1), 1u);
    ExpectEqualToAFreshBuild(spec, f);
  }
}

// A reservation of several tasks is an arc of convex pieces priced by k
// (spread 1000 * k / 8 of the CPU, tasks 100 * (k - 1)), in the graph
// manager's deferred mode; a restarted policy's Refresh over the stored
// network changes nothing, and the tasks spread two to a machine.
TEST(ProfilePolicyTest, QuincyRoomArcsArePiecesByKAndSurviveARestart) {
  const std::string spec = "profile:quincy=1,preemptive=1,tasks=100";
  ProfileFixture f(Make(spec));
  f.deferred_ = true;
  f.AddMachine(1, 8000, 16, 8);
  f.AddMachine(2, 8000, 16, 8);
  f.Submit(1, {Task(1, 1000, 1), Task(2, 1000, 1), Task(3, 1000, 1),
               Task(4, 1000, 1)});
  f.Sync();
  int multi_piece = 0;
  f.network_.ForEachNode([&](NodeId id, const NodeData& d) {
    if (d.kind != NodeKind::kEquivalenceClass) return;
    f.network_.ForEachOutArc(id, [&](const ArcView& arc) {
      if (f.network_.node(arc.dst).kind != NodeKind::kMachine) return;
      EXPECT_EQ(arc.cost, 125);
      int64_t k = 1;
      for (const ArcSegment& piece : arc.extra_segments) {
        ++k;
        EXPECT_EQ(piece.cost, 125 * k + 100 * (k - 1)) << k;
      }
      multi_piece += !arc.extra_segments.empty();
    });
  });
  EXPECT_EQ(multi_piece, 2);
  NetworkBuilder restored(f.network_);
  ASSERT_THAT(restored.RestoreFromNetwork(), IsOk());
  std::unique_ptr<SchedulingPolicy> restarted = Make(spec);
  ASSERT_TRUE(restarted->refresh_owed());
  f.network_.set_record_changes(true);
  ASSERT_THAT(restarted->Refresh(f.state_, SyncContext{f.now_us_}, restored),
              IsOk());
  EXPECT_TRUE(f.network_.TakeChanges().empty());
  f.network_.set_record_changes(false);
  f.Settle();
  EXPECT_EQ(f.state_.FindMachine(MachineId(1))->running.size(), 2u);
  EXPECT_EQ(f.state_.FindMachine(MachineId(2))->running.size(), 2u);
  ExpectEqualToAFreshBuild(spec, f);
}

// Pooled tasks would read their input anywhere.
TEST(ProfilePolicyTest, ThePoolIsRefusedWithLocality) {
  EXPECT_THAT(ParsePolicySpec("profile:pool_slot_tasks=1,locality=100")
                  .status()
                  .message(),
              HasSubstr("pool_slot_tasks cannot be combined with locality"));
  EXPECT_THAT(ParsePolicySpec("profile:pool_slot_tasks=1,tasks=10"), IsOk());
}

// The room pool serves the capped walk's free room and prices by the tasks
// term alone (room_pool.h): anything else is refused with the reason.
TEST(ProfilePolicyTest, TheRoomPoolNeedsThePoolACapAndTasksAlone) {
  const std::string base =
      "profile:spread=0,preferred_labels=0,tasks=10,room_pool=1";
  EXPECT_THAT(
      ParsePolicySpec(base + ",pool_slot_tasks=1,shape_machines_per_task=4"),
      IsOk());
  for (const std::string& missing :
       {base + ",shape_machines_per_task=4", base + ",pool_slot_tasks=1",
        base + ",pool_slot_tasks=1,shape_machines_per_task=4,preemptive=1"}) {
    EXPECT_THAT(ParsePolicySpec(missing).status().message(),
                HasSubstr("room_pool needs pool_slot_tasks=1"))
        << missing;
  }
  EXPECT_THAT(
      ParsePolicySpec("profile:tasks=10,room_pool=1,pool_slot_tasks=1,"
                      "shape_machines_per_task=4")
          .status()
          .message(),
      HasSubstr("room_pool prices by the tasks term alone; set spread"));
  EXPECT_THAT(ParsePolicySpec(base + ",pool_slot_tasks=1,"
                                     "shape_machines_per_task=4,first_fit=5")
                  .status()
                  .message(),
              HasSubstr("set first_fit to 0"));
}

// Random weights, filters and clusters with GPUs (whole and fractional
// asks, model lists): every decision passes the one fit rule (Place), no
// machine runs more than the limit, and once rounds stop placing, no
// waiting task fits a machine under the limit.
TEST(ProfilePolicyTest, RandomProfilesAreFeasibleByConstruction) {
  std::mt19937_64 rng(3131);
  const std::vector<std::string> models = {"A10", "V100", "T4"};
  int placed = 0;
  int placed_on_devices = 0;
  int waiting = 0;
  int displaced = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t limit =
        rng() % 3 == 0 ? 1 + static_cast<int64_t>(rng() % 4) : 0;
    const std::string spec = absl::StrCat(
        "profile:spread=", rng() % 2000, ",pack=", rng() % 2000,
        ",preferred_labels=", rng() % 1000, ",model_affinity=", rng() % 1000,
        ",priority_step=", rng() % 3 * 500, ",max_tasks_per_machine=", limit,
        ",tasks=", rng() % 3 * 10,
        trial % 4 == 0   ? ",shape_machines_per_task=1,min_shape_machines=1"
        : trial % 4 == 1 ? absl::StrCat(",locality=", rng() % 2 * 700)
        : trial % 4 == 2
            ? absl::StrCat(",pool_slot_tasks=1,preemptive=", rng() % 2,
                           ",preemption_cost=", 100 + rng() % 2000)
            : absl::StrCat(",gate=1,fragmentation=", rng() % 2000,
                           ",fragmentation_levels=", rng() % 2 * 100,
                           ",first_fit=", rng() % 100));
    ProfileFixture f(Make(spec));
    const int machines = 1 + static_cast<int>(rng() % 6);
    for (int m = 1; m <= machines; ++m) {
      std::vector<cluster::AcceleratorGroup> devices;
      if (rng() % 3 != 0) {
        devices.push_back({static_cast<uint32_t>(1 + rng() % 4),
                           models[rng() % models.size()], 1000, 0});
      }
      f.AddMachine(
          static_cast<uint64_t>(m), static_cast<int64_t>(2000 + rng() % 14000),
          static_cast<int64_t>(4 + rng() % 60), 1 + rng() % 10,
          {{"zone", rng() % 2 ? "a" : "b"}}, devices, absl::StrCat("r", m % 3));
    }
    uint64_t next = 1;
    const int jobs = 1 + static_cast<int>(rng() % 5);
    for (int j = 1; j <= jobs; ++j) {
      std::vector<cluster::TaskSpec> tasks;
      const int n = 1 + static_cast<int>(rng() % 8);
      for (int t = 0; t < n; ++t) {
        cluster::TaskSpec task =
            Task(next++, static_cast<int64_t>(rng() % 4000),
                 static_cast<int64_t>(rng() % 8));
        switch (rng() % 4) {
          case 0:
            task.accelerator.whole = static_cast<uint32_t>(1 + rng() % 2);
            break;
          case 1:
            task.accelerator.milli = static_cast<int64_t>(100 + rng() % 800);
            break;
          default:
            break;
        }
        if (!task.accelerator.empty() && rng() % 2 == 0) {
          const std::string& model = models[rng() % models.size()];
          task.accelerator.models = std::vector<std::string>{model, "A10"};
          task.accelerator.preferred_models = {model};
        }
        if (rng() % 5 == 0) {
          task.request = {};  // asks for a slot only (the pool's, if any)
          task.accelerator = {};
        }
        if (rng() % 5 == 0) task.required_labels = {{"zone", "a"}};
        if (rng() % 4 == 0) task.preferred_labels = {{"zone", "b"}};
        if (rng() % 2 == 0) {
          task.input = {{MachineId(1 + rng() % static_cast<uint64_t>(machines)),
                         "", static_cast<int64_t>(1 + rng() % 1000) << 20}};
        }
        tasks.push_back(task);
      }
      f.Submit(static_cast<uint64_t>(j), tasks,
               static_cast<int32_t>(rng() % 10));
    }
    f.Sync();
    ASSERT_LT(f.Settle(), 50) << "trial " << trial << " never settled";
    // Then urgent work that asks for a slot only (which preemptive trials
    // may place by displacing).
    f.Submit(100, {{.id = TaskId(next++)}, {.id = TaskId(next++)}},
             /*priority=*/20);
    f.Sync();
    ASSERT_LT(f.Settle(), 50) << "trial " << trial << " never settled";
    displaced += f.displaced_;
    for (const auto& [id, machine] : f.state_.machines()) {
      if (limit > 0) {
        ASSERT_LE(static_cast<int64_t>(machine.running.size()), limit) << spec;
      }
      for (const cluster::Device& device : machine.devices) {
        ASSERT_LE(device.used_milli, cluster::kMilliPerDevice);
      }
    }
    for (const auto& [id, task] : f.state_.tasks()) {
      placed += task.running() ? 1 : 0;
      placed_on_devices += task.devices.empty() ? 0 : 1;
      if (task.running()) continue;
      ++waiting;
      for (const auto& [machine_id, machine] : f.state_.machines()) {
        const bool under_limit =
            limit == 0 || static_cast<int64_t>(machine.running.size()) < limit;
        EXPECT_FALSE(under_limit &&
                     cluster::FitTask(machine, task.spec).fits() &&
                     ConstraintsAdmit(task, machine, f.state_))
            << spec << ": task " << id << " waits but fits machine "
            << machine_id;
      }
    }
  }
  // The trials are not trivial: many placements, on devices too, and some
  // tasks left waiting for room.
  EXPECT_GT(displaced, 0);  // preemptive trials did displace
  EXPECT_GT(placed, 200);
  EXPECT_GT(placed_on_devices, 50);
  EXPECT_GT(waiting, 20);
}

// A gate admits one new task per machine a round, of whichever shape
// the solver picks, and its kept prices follow the machines: after every
// round the network equals a fresh policy's build of the same state.
TEST(ProfilePolicyTest, AGateAdmitsOneTaskPerMachineARound) {
  const std::string spec = "profile:gate=1,pack=500,first_fit=10";
  ProfileFixture f(Make(spec));
  for (uint64_t m = 1; m <= 3; ++m) f.AddMachine(m, 8000, 32, 4);
  f.Submit(1, {Task(1, 1000, 1), Task(2, 1000, 1), Task(3, 1000, 1),
               Task(4, 1000, 1), Task(5, 2000, 2), Task(6, 2000, 2),
               Task(7, 2000, 2)});
  f.Sync();
  std::vector<int> placed;
  for (int round = 0; round < 4; ++round) {
    placed.push_back(f.Round());
    SCOPED_TRACE(round);
    ExpectEqualToAFreshBuild(spec, f);
  }
  EXPECT_EQ(placed, (std::vector<int>{3, 3, 1, 0}));
  for (const auto& [id, machine] : f.state_.machines()) {
    EXPECT_TRUE(cluster::WithinCapacity(machine)) << id;
  }
}

// A different-machines job's tasks share one shape whose ask covers them
// all, and it changes when a task joins the job though no machine changes:
// the gates reprice that shape on every machine, so its arcs stay exactly
// where one of its tasks fits (a fresh policy's build), not where the old
// ask fitted.
TEST(ProfilePolicyTest, AGatedShapeWhoseAskChangesIsPricedAgain) {
  const std::string spec = "profile:gate=1,pack=500";
  ProfileFixture f(Make(spec));
  f.AddMachine(1, 8000, 32, 4);
  f.AddMachine(2, 2000, 32, 4);
  cluster::JobSubmitted job{JobId(1), "j", 0, {Task(1, 1000, 1)}};
  job.different_machines = true;
  f.Apply(job);
  f.Sync();
  // The job's second task asks for 4,000 millis: machine 2 is out.
  f.Apply(cluster::TaskSubmitted{JobId(1), Task(2, 4000, 1)});
  f.Sync();
  ExpectEqualToAFreshBuild(spec, f);
  // One task a round, on machine 1 only (Place refuses what does not fit).
  EXPECT_EQ(f.Round(), 1);
}

// A different-machines job that covers a whole device and a fraction
// reaches a machine only where the fraction fits too: when a larger
// fraction joins the job, the whole-device ask is the same, and the
// machine of half-unit devices, where the new task does not fit, is
// dropped as a fresh build drops it.
TEST(ProfilePolicyTest, AGatedCoverDropsAMachineWhenALargerFractionJoins) {
  const std::string spec = "profile:gate=1,pack=500";
  ProfileFixture f(Make(spec));
  f.AddMachine(1, 8000, 32, 4, {}, {{2, "G", 500, 0}});
  f.AddMachine(2, 8000, 32, 4, {}, {{2, "G", 1000, 0}});
  cluster::TaskSpec whole = Task(1, 100, 1);
  whole.accelerator.whole = 1;
  cluster::TaskSpec small = Task(2, 100, 1);
  small.accelerator.milli = 300;
  cluster::JobSubmitted job{JobId(1), "j", 0, {whole, small}};
  job.different_machines = true;
  f.Apply(job);
  f.Sync();
  cluster::TaskSpec large = Task(3, 100, 1);
  large.accelerator.milli = 700;
  f.Apply(cluster::TaskSubmitted{JobId(1), large});
  f.Sync();
  ExpectEqualToAFreshBuild(spec, f);
  // One task a round, on machine 2 only (Place refuses what does not fit).
  EXPECT_EQ(f.Round(), 1);
  EXPECT_EQ(f.Round(), 0);
}

// Explaining a price prepares the terms for the state it is given; if
// that moved a term's inputs (here the fragmentation workload, rebuilt
// once the tasks grew by a third), the next sync of a gated profile prices
// every machine again instead of keeping prices of the old inputs.
TEST(ProfilePolicyTest, AGatedProfileRepricesAfterAnExplainMovedItsTerms) {
  const std::string spec =
      "profile:gate=1,spread=0,preferred_labels=0,fragmentation=64000,"
      "fragmentation_levels=0";
  ProfileFixture f(Make(spec));
  for (uint64_t m = 1; m <= 2; ++m) {
    f.AddMachine(m, 8000, 32, 4, {}, {{1, "G", 1000, 0}});
  }
  cluster::TaskSpec half = Task(1, 100, 1);
  half.accelerator.milli = 500;
  cluster::TaskSpec other_half = half;
  other_half.id = TaskId(2);
  f.Submit(1, {half, other_half});
  f.Sync();
  std::vector<cluster::TaskSpec> whole;
  for (uint64_t t = 3; t <= 5; ++t) {
    whole.push_back(Task(t, 100, 1));
    whole.back().accelerator.whole = 1;
  }
  f.Submit(2, whole);
  auto* profile = dynamic_cast<ProfilePolicy*>(f.policy_.get());
  ASSERT_NE(profile, nullptr);
  const std::optional<RequestShape> shape =
      WaitingShapeOf(*f.state_.FindTask(TaskId(1)), f.state_);
  ASSERT_TRUE(shape.has_value());
  // Half a GPU now strands 500 milli for whole-GPU tasks, 3 of 5.
  EXPECT_EQ(profile
                ->ExplainCost(f.state_, *f.state_.FindMachine(MachineId(1)),
                              *shape, 1)
                .front()
                .cost,
            300);
  f.Sync();
  ExpectEqualToAFreshBuild(spec, f);
}

TEST(ProfilePolicyTest, WaitingMustCostMoreThanTheDearestPlacement) {
  EXPECT_THAT(CheckProfile(ProfileParams{}), IsOk());
  ProfileParams negative;
  negative.pack = -1;
  EXPECT_THAT(CheckProfile(negative).message(),
              HasSubstr("pack must not be negative"));
  auto bad =
      ParsePolicySpec("profile:spread=600,pack=400,unscheduled_cost=1000");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("unscheduled_cost (1000) must exceed the dearest "
                        "placement, spread + pack + model_affinity + "
                        "locality + fragmentation + first_fit = 1000"));
  // Fragmentation and first fit count at their weights.
  EXPECT_THAT(ParsePolicySpec("profile:spread=0,preferred_labels=0,gate=1,"
                              "fragmentation=900,first_fit=100,"
                              "unscheduled_cost=1000")
                  .status()
                  .message(),
              HasSubstr("= 1000"));
  // The tasks term counts up to the decoder's slot limit.
  EXPECT_THAT(ParsePolicySpec("profile:spread=0,tasks=100,"
                              "unscheduled_cost=99900")
                  .status()
                  .message(),
              HasSubstr("tasks * 999 = 99900"));
  EXPECT_THAT(ParsePolicySpec("profile:spread=0,tasks=100,"
                              "unscheduled_cost=99901"),
              IsOk());
  // The network term counts MiB/s up to its bound.
  EXPECT_THAT(ParsePolicySpec("profile:spread=0,preferred_labels=0,network=2,"
                              "unscheduled_cost=131072")
                  .status()
                  .message(),
              HasSubstr("network * 65536 = 131072"));
  EXPECT_THAT(ParsePolicySpec("profile:spread=0,preferred_labels=0,network=2,"
                              "unscheduled_cost=131073,network_room_by_use=1"),
              IsOk());
  EXPECT_THAT(ParsePolicySpec("profile:spread=600,pack=399,"
                              "unscheduled_cost=1000"),
              IsOk());
  // A gate admits any shape that fits: no cap, pool or locality walk.
  for (const char* spec :
       {"profile:gate=1,shape_machines_per_task=4",
        "profile:gate=1,pool_slot_tasks=1", "profile:gate=1,locality=10"}) {
    EXPECT_THAT(ParsePolicySpec(spec).status().message(),
                HasSubstr("gate cannot be combined"))
        << spec;
  }
  auto canonical = CanonicalPolicySpec("profile: pack=1000 , spread=0");
  ASSERT_THAT(canonical, IsOk());
  EXPECT_EQ(*canonical, "profile:pack=1000,spread=0");
}

}  // namespace
}  // namespace flowsched::flow
