#include "services/flow/load_spreading_policy.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/cluster/resource_fit.h"
#include "services/common/status_matchers.h"
#include "services/flow/placement_extractor.h"
#include "services/flow/policy_test_util.h"
#include "services/flow/room_pool.h"
#include "services/solver/flow_checker.h"
#include "services/solver/successive_shortest_path.h"

namespace flowsched::flow {
namespace {

using cluster::ClusterEvent;
using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

ClusterEvent Ev(cluster::EventBody body) { return {"e", 1, "t", body}; }

class LoadSpreadingPolicyTest : public ::testing::Test {
 protected:
  void Apply(cluster::EventBody body) {
    ASSERT_THAT(state_.Apply(Ev(body), 1, changes_), IsOk());
  }
  void Sync() {
    ASSERT_THAT(policy_.Sync(changes_, state_, SyncContext{5}, builder_),
                IsOk());
    changes_.Clear();
  }
  // Job 7 with tasks 71 and 72, then a Sync.
  void SubmitJob7AndSync() {
    cluster::JobSubmitted job{JobId(7), "j", 0, {}};
    job.tasks.resize(2);
    job.tasks[0].id = TaskId(71);
    job.tasks[1].id = TaskId(72);
    Apply(job);
    Sync();
  }
  // Sync, solve, apply, until a round changes nothing (at most `rounds`);
  // every placement must apply (none stale).
  void RunRoundsUntilQuiet(int rounds) {
    for (int round = 0; round < rounds; ++round) {
      Sync();
      auto solved = testing::SolveNetwork(network_);
      ASSERT_THAT(solved.status(), IsOk());
      auto applied = testing::ApplyRound(*solved, state_, 2, changes_);
      ASSERT_THAT(applied.status(), IsOk()) << "round " << round;
      if (*applied == 0) return;
    }
  }
  int64_t ArcCost(NodeId src, NodeId dst) {
    auto arc = network_.FindArc(src, dst);
    EXPECT_TRUE(arc.has_value()) << src << "->" << dst;
    return arc ? arc->cost : -1;
  }

  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
  FlowNetwork network_;
  NetworkBuilder builder_{network_};
  LoadSpreadingPolicy policy_;
};

TEST_F(LoadSpreadingPolicyTest, BuildsFirmamentFigure6aShape) {
  Apply(cluster::MachineAdded{MachineId(1), "r", {}, 2, {}});
  Apply(cluster::MachineAdded{MachineId(2), "r", {}, 3, {}});
  SubmitJob7AndSync();

  const NodeId sink = builder_.sink();
  const NodeId x = builder_.cluster_aggregator();
  const NodeId m1 = builder_.FindMachineNode(MachineId(1));
  const NodeId u7 = builder_.FindJobNode(JobId(7));
  const NodeId t71 = builder_.FindTaskNode(TaskId(71));
  // nodes: sink, X, the room pool R (room_pool.h: no shape of it waits, so
  // its arcs are closed), 2 machines, U_7, 2 tasks
  EXPECT_EQ(network_.node_count(), 8u);
  const NodeId room_pool = builder_.FindAggregatorNode(
      NodeKind::kEquivalenceClass,
      NetworkBuilder::StableKey(RoomPool::kNodeKey));
  ASSERT_NE(room_pool, kNoNode);
  ASSERT_TRUE(network_.FindArc(room_pool, m1).has_value());
  EXPECT_EQ(network_.FindArc(room_pool, m1)->capacity, 0);
  EXPECT_EQ(network_.node(sink).supply, -2);
  EXPECT_EQ(network_.node(t71).supply, 1);
  EXPECT_EQ(ArcCost(t71, x), 0);
  EXPECT_EQ(ArcCost(t71, u7), 100'000);
  // Convex X->M1: the first new task costs 0, the second 10.
  EXPECT_EQ(ArcCost(x, m1), 0);
  EXPECT_EQ(network_.FindArc(x, m1)->capacity, 1);
  ASSERT_EQ(network_.FindArc(x, m1)->extra_segments.size(), 1u);
  EXPECT_EQ(network_.FindArc(x, m1)->extra_segments[0], (ArcSegment{1, 10}));
  EXPECT_EQ(network_.FindArc(m1, sink)->capacity, 2);
  EXPECT_EQ(network_.FindArc(u7, sink)->capacity, 2);
  EXPECT_EQ(network_.total_supply(), 0);
}

TEST_F(LoadSpreadingPolicyTest, RunningTasksRaiseTheMachineCost) {
  Apply(cluster::MachineAdded{MachineId(1), "r", {}, 4, {}});
  SubmitJob7AndSync();
  ASSERT_THAT(state_.Place(TaskId(71), MachineId(1), 5, changes_), IsOk());
  Sync();
  const NodeId x = builder_.cluster_aggregator();
  const NodeId m1 = builder_.FindMachineNode(MachineId(1));
  const NodeId t71 = builder_.FindTaskNode(TaskId(71));
  const NodeId u7 = builder_.FindJobNode(JobId(7));
  // One piece per slot at a fixed cost (10 * slot); the running task's
  // slot 0 is closed, so the three free slots still cost 10, 20, 30 (the
  // layout used to be three pieces repriced from the running count; the
  // open pieces are the same, see load_spreading_policy.h).
  EXPECT_EQ(ArcCost(x, m1), 0);
  EXPECT_EQ(network_.FindArc(x, m1)->capacity, 0);
  EXPECT_THAT(network_.FindArc(x, m1)->extra_segments,
              ::testing::ElementsAre(ArcSegment{1, 10}, ArcSegment{1, 20},
                                     ArcSegment{1, 30}));
  // The running task keeps its machine at no cost and may only leave it by
  // preemption, which costs more than waiting.
  EXPECT_EQ(ArcCost(t71, m1), 0);
  EXPECT_EQ(ArcCost(t71, u7), 200'000);
  EXPECT_FALSE(network_.FindArc(t71, x).has_value());
  EXPECT_EQ(network_.node(t71).running_on, 1u);
}

// The open pieces price the k-th new task (k = 0, 1, ...) at
// per_task_cost * (running + k) for every running count, the convex
// function the policy has always meant; a machine beyond kMaxArcSegments
// slots lumps its last free slots into the last piece.
TEST(LoadSpreadingArcTest, OpenPiecesAreTheConvexCostOfTheFreeSlots) {
  for (const uint32_t slots : {1u, 2u, 4u, 13u, 64u, 100u}) {
    for (uint32_t running = 0; running <= slots; ++running) {
      cluster::ClusterState state;
      cluster::ChangeSet changes;
      ASSERT_THAT(state.Apply(Ev(cluster::MachineAdded{
                                  MachineId(1), "r", {}, slots, {}}),
                              1, changes),
                  IsOk());
      // One more task waits: the pool is open while one it is for waits
      // or runs.
      cluster::JobSubmitted job{JobId(1), "j", 0, {}};
      for (uint64_t t = 1; t <= running + 1; ++t)
        job.tasks.push_back({.id = TaskId(t)});
      ASSERT_THAT(state.Apply(Ev(job), 1, changes), IsOk());
      for (uint64_t t = 1; t <= running; ++t) {
        ASSERT_THAT(state.Place(TaskId(t), MachineId(1), 1, changes), IsOk());
      }
      FlowNetwork network;
      NetworkBuilder builder(network);
      LoadSpreadingPolicy policy;
      ASSERT_THAT(policy.Sync(changes, state, SyncContext{1}, builder), IsOk());
      auto arc = network.FindArc(builder.cluster_aggregator(),
                                 builder.FindMachineNode(MachineId(1)));
      ASSERT_TRUE(arc.has_value());
      std::vector<int64_t> unit_costs(static_cast<size_t>(arc->capacity),
                                      arc->cost);
      for (const ArcSegment& piece : arc->extra_segments) {
        unit_costs.insert(unit_costs.end(), static_cast<size_t>(piece.capacity),
                          piece.cost);
      }
      ASSERT_EQ(unit_costs.size(), slots - running)
          << slots << " slots, " << running << " running";
      for (size_t k = 0; k < unit_costs.size(); ++k) {
        const int64_t slot = std::min<int64_t>(
            running + static_cast<int64_t>(k), kMaxArcSegments - 1);
        EXPECT_EQ(unit_costs[k], 10 * slot)
            << slots << " slots, " << running << " running, task " << k;
      }
    }
  }
}

// Why the pieces have fixed costs: a start or finish changes one piece's
// capacity, so the solver's incremental mirror repairs one arc instead of
// every piece of the machine's arc.
TEST_F(LoadSpreadingPolicyTest, StartOrFinishFlipsOnePiece) {
  Apply(cluster::MachineAdded{MachineId(1), "r", {}, 13, {}});
  SubmitJob7AndSync();
  const NodeId x = builder_.cluster_aggregator();
  const NodeId m1 = builder_.FindMachineNode(MachineId(1));
  auto pieces = [&] {
    auto arc = network_.FindArc(x, m1);
    std::vector<ArcSegment> out{{arc->capacity, arc->cost}};
    out.insert(out.end(), arc->extra_segments.begin(),
               arc->extra_segments.end());
    return out;
  };
  auto changed = [](const std::vector<ArcSegment>& a,
                    const std::vector<ArcSegment>& b) {
    EXPECT_EQ(a.size(), b.size());
    std::vector<size_t> out;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      if (a[i] != b[i]) {
        EXPECT_EQ(a[i].cost, b[i].cost) << "piece " << i;
        out.push_back(i);
      }
    }
    return out;
  };
  const std::vector<ArcSegment> idle = pieces();
  ASSERT_THAT(state_.Place(TaskId(71), MachineId(1), 5, changes_), IsOk());
  Sync();
  const std::vector<ArcSegment> one = pieces();
  EXPECT_EQ(changed(idle, one), std::vector<size_t>{0});
  ASSERT_THAT(state_.Place(TaskId(72), MachineId(1), 5, changes_), IsOk());
  Sync();
  const std::vector<ArcSegment> two = pieces();
  EXPECT_EQ(changed(one, two), std::vector<size_t>{1});
  Apply(cluster::TaskFinished{JobId(7), TaskId(71)});
  Sync();
  EXPECT_EQ(changed(two, pieces()), std::vector<size_t>{1});
}

TEST_F(LoadSpreadingPolicyTest, RemovalsShrinkTheNetwork) {
  Apply(cluster::MachineAdded{MachineId(1), "r", {}, 4, {}});
  cluster::JobSubmitted job{JobId(7), "j", 0, {}};
  job.tasks.resize(1);
  job.tasks[0].id = TaskId(71);
  Apply(job);
  Sync();
  ASSERT_THAT(state_.Place(TaskId(71), MachineId(1), 5, changes_), IsOk());
  Sync();
  Apply(cluster::MachineFailed{MachineId(1), "x"});
  Sync();
  const NodeId t71 = builder_.FindTaskNode(TaskId(71));
  EXPECT_TRUE(network_.FindArc(t71, builder_.cluster_aggregator()));
  EXPECT_EQ(builder_.FindMachineNode(MachineId(1)), kNoNode);
  Apply(cluster::TaskFinished{JobId(7), TaskId(71)});
  Sync();
  // Only the sink, X and the room pool remain.
  EXPECT_EQ(network_.node_count(), 3u);
  EXPECT_EQ(network_.arc_count(), 0u);
  EXPECT_EQ(network_.node(builder_.sink()).supply, 0);
}

// Worked by hand: 3 machines of 4 slots, one running task on m1, and a
// burst of 5 new tasks. Marginal costs are m1: 10, 20, 30; m2 and m3: 0,
// 10, 20. The cheapest 5 units are 0, 0, 10, 10, 10 (total 30): two new
// tasks on m2, two on m3 and one on m1, i.e. 2 tasks on every machine.
TEST_F(LoadSpreadingPolicyTest, OneRoundSpreadsABurstEvenly) {
  for (uint64_t m = 1; m <= 3; ++m) {
    Apply(cluster::MachineAdded{MachineId(m), "r", {}, 4, {}});
  }
  cluster::JobSubmitted job{JobId(1), "j", 0, {}};
  for (uint64_t t = 1; t <= 6; ++t) job.tasks.push_back({.id = TaskId(t)});
  Apply(job);
  Sync();
  ASSERT_THAT(state_.Place(TaskId(1), MachineId(1), 1, changes_), IsOk());
  Sync();

  solver::McmfProblem problem;
  std::vector<ArcSlot> slots;
  network_.ExportProblem(problem, slots);
  solver::SuccessiveShortestPath ssp;
  auto solution = ssp.Solve(problem);
  ASSERT_THAT(solution, IsOk());
  ASSERT_THAT(solver::CheckOptimalFlow(problem, *solution), IsOk());
  EXPECT_EQ(solution->total_cost, 30);
  std::vector<int64_t> flow(network_.arc_slot_count(), 0);
  for (size_t i = 0; i < slots.size(); ++i) flow[slots[i]] += solution->flow[i];
  auto placements = ExtractPlacements(network_, flow);
  ASSERT_THAT(placements, IsOk());
  std::map<uint64_t, int> per_machine;
  for (const TaskPlacement& p : *placements) {
    ASSERT_NE(p.machine_id, 0u) << "task " << p.task_id << " left waiting";
    ++per_machine[p.machine_id];
  }
  EXPECT_EQ(per_machine, (std::map<uint64_t, int>{{1, 2}, {2, 2}, {3, 2}}));
}

// Machines 1..count of 16 cores, 64 GiB and `slots` slots, machine m in
// rack "rack-<m % racks>".
void AddMachines(testing::PinnedRun& run, uint64_t count, uint32_t slots,
                 uint64_t racks) {
  for (uint64_t m = 1; m <= count; ++m) {
    ASSERT_THAT(
        run.Apply(cluster::MachineAdded{MachineId(m),
                                        absl::StrCat("rack-", m % racks),
                                        {16'000, int64_t{64} << 30, 0},
                                        slots,
                                        {}}),
        IsOk());
  }
}

// The pipeline integration test's workload at unit level, deterministic:
// 300 tasks with CPU and memory asks in `flowsched generate`'s ranges
// (250-4,000 millis, 1-8 GiB; drawn with rng() % n, which every standard
// library gives alike), nearly each its own shape, on 100 machines of 4
// slots and 16 cores; all in one round, or the first 11 jobs a round
// before the rest as the integration test's runs have split them; synced
// eagerly or as the graph manager does. Load spreading uses every
// machine. A class arc prices a task from the machine's running tasks
// alone, blind to what other shapes send there in the same round, so walks
// that gave every shape room at once let the solver stack shapes on a
// machine (docs/2026-11-30-burst-room.md): this guards against that.
// It runs with the room pool (load-spreading) and without it, where the
// reservation walk alone spreads the shapes.
TEST(LoadSpreadingSpreadTest, ManySingleTaskShapesUseEveryMachine) {
  for (const bool room_pool : {true, false}) {
    ProfileParams profile = LoadSpreadingProfile({});
    profile.room_pool = room_pool;
    for (const bool deferred : {false, true}) {
      for (const uint64_t first_round_jobs : {30, 11}) {
        for (uint64_t seed = 1; seed <= 4; ++seed) {
          SCOPED_TRACE(absl::StrCat("room pool ", room_pool, ", deferred ",
                                    deferred, ", first round ",
                                    first_round_jobs, " jobs, seed ", seed));
          ProfilePolicy policy(profile, "load-spreading");
          testing::PinnedRun run(policy, deferred);
          AddMachines(run, 100, 4, 10);
          std::mt19937_64 rng(seed);
          uint64_t task = 0;
          for (uint64_t j = 1; j <= 30; ++j) {
            cluster::JobSubmitted job{JobId(j), "j", 0, {}};
            for (int t = 0; t < 10; ++t) {
              cluster::TaskSpec spec;
              spec.id = TaskId(++task);
              spec.request.cpu_millis =
                  250 + static_cast<int64_t>(rng() % 3751);
              spec.request.memory_bytes = static_cast<int64_t>(1 + rng() % 8)
                                          << 30;
              job.tasks.push_back(spec);
            }
            ASSERT_THAT(run.Apply(job), IsOk());
            if (j == first_round_jobs) {
              ASSERT_THAT(run.Sync(), IsOk());
              ASSERT_THAT(run.Round().status(), IsOk());
            }
          }
          ASSERT_THAT(run.Sync(), IsOk());
          // Rounds until every task runs (at most 10).
          size_t running = 0;
          size_t used = 0;
          for (int round = 0; round < 10 && running < 300; ++round) {
            ASSERT_THAT(run.Round().status(), IsOk());
            running = 0;
            used = 0;
            for (const auto& [id, machine] : run.state().machines()) {
              running += machine.running.size();
              if (!machine.running.empty()) ++used;
            }
          }
          EXPECT_EQ(running, 300u);
          EXPECT_EQ(used, 100u);
        }
      }
    }
  }
}

// A burst of many shapes, each task its own (CPU 250-1,000 millis, 1 GiB,
// as `bench e2e` asks), on machines with room for any of them in every
// slot: the room pool (room_pool.h) places all of them in one round, and
// spread evenly, as the slot pool spreads tasks that ask for nothing.
TEST(LoadSpreadingSpreadTest, ABurstOfManyShapesIsPlacedInOneRoundEvenly) {
  for (const bool deferred : {false, true}) {
    SCOPED_TRACE(absl::StrCat("deferred ", deferred));
    LoadSpreadingPolicy policy;
    testing::PinnedRun run(policy, deferred);
    AddMachines(run, 40, 12, 4);
    cluster::JobSubmitted job{JobId(1), "j", 0, {}};
    for (uint64_t t = 1; t <= 400; ++t) {
      cluster::TaskSpec spec;
      spec.id = TaskId(t);
      spec.request.cpu_millis = 250 + static_cast<int64_t>(t * 7 % 751);
      spec.request.memory_bytes = int64_t{1} << 30;
      job.tasks.push_back(spec);
    }
    ASSERT_THAT(run.Apply(job), IsOk());
    ASSERT_THAT(run.Sync(), IsOk());
    ASSERT_THAT(run.Round().status(), IsOk());
    for (const auto& [id, machine] : run.state().machines()) {
      EXPECT_EQ(machine.running.size(), 10u) << "machine " << id;
      EXPECT_TRUE(cluster::WithinCapacity(machine)) << id;
    }
  }
}

// Tasks asking for a device reserve on machines the room pool holds; the
// pool's arc there closes (its free slots no longer each fit the bound),
// and the room left goes to the pool's shapes by reservation in the same
// round: everything fits and runs at once.
TEST_F(LoadSpreadingPolicyTest,
       DevicesReserveOnPooledMachinesTheRestGoesRound) {
  // Machine 1: 4 slots of 1,000 millis each and a GPU; machine 2: room.
  for (uint64_t m = 1; m <= 2; ++m) {
    cluster::MachineAdded added{
        MachineId(m), "r", {m == 1 ? 4000 : 16'000, 0, 0}, 4, {}};
    if (m == 1) added.accelerators.push_back({1, "a10", 1000, 0});
    Apply(added);
  }
  cluster::JobSubmitted job{JobId(7), "j", 0, {}};
  for (uint64_t t = 1; t <= 7; ++t) {
    cluster::TaskSpec spec;
    spec.id = TaskId(t);
    spec.request.cpu_millis = t == 7 ? 2000 : 1000;
    if (t == 7) spec.accelerator.whole = 1;
    job.tasks.push_back(spec);
  }
  Apply(job);
  Sync();
  const NodeId room_pool = builder_.FindAggregatorNode(
      NodeKind::kEquivalenceClass,
      NetworkBuilder::StableKey(RoomPool::kNodeKey));
  const auto pool_arc =
      network_.FindArc(room_pool, builder_.FindMachineNode(MachineId(1)));
  ASSERT_TRUE(pool_arc.has_value());
  int64_t open = pool_arc->capacity;
  for (const ArcSegment& piece : pool_arc->extra_segments) {
    open += piece.capacity;
  }
  EXPECT_EQ(open, 0);
  auto solved = testing::SolveNetwork(network_);
  ASSERT_THAT(solved.status(), IsOk());
  ASSERT_THAT(testing::ApplyRound(*solved, state_, 2, changes_).status(),
              IsOk());
  for (const auto& [id, task] : state_.tasks()) {
    EXPECT_TRUE(task.running()) << "task " << id;
  }
  EXPECT_EQ(state_.FindTask(TaskId(7))->machine, MachineId(1));
  for (const auto& [id, machine] : state_.machines()) {
    EXPECT_TRUE(cluster::WithinCapacity(machine)) << id;
  }
}

// Beside the room pool, the slot pool's arcs are open on every machine
// while a task asking for no room waits or runs, and closed otherwise, on
// machines no sync named too; a fresh policy over the same state builds
// the same network each time (as a policy switch rebuilds it).
TEST_F(LoadSpreadingPolicyTest, TheSlotPoolIsOpenWhileATaskItIsForWaitsOrRuns) {
  for (uint64_t m = 1; m <= 3; ++m) {
    Apply(cluster::MachineAdded{MachineId(m), "r", {8000, 0, 0}, 4, {}});
  }
  const auto open_slots = [&](uint64_t machine) {
    const auto arc =
        network_.FindArc(builder_.cluster_aggregator(),
                         builder_.FindMachineNode(MachineId(machine)));
    EXPECT_TRUE(arc.has_value());
    if (!arc.has_value()) return int64_t{-1};
    int64_t open = arc->capacity;
    for (const ArcSegment& piece : arc->extra_segments) open += piece.capacity;
    return open;
  };
  const auto expect_pool = [&](const std::vector<int64_t>& slots,
                               const char* step) {
    for (uint64_t m = 1; m <= 3; ++m) {
      EXPECT_EQ(open_slots(m), slots[m - 1]) << step << ", machine " << m;
    }
    LoadSpreadingPolicy fresh;
    auto built = testing::DescribeFreshBuild(fresh, state_, 5);
    ASSERT_THAT(built.status(), IsOk());
    EXPECT_EQ(testing::Describe(network_), *built) << step;
  };
  cluster::JobSubmitted asks{JobId(1), "asks", 0, {}};
  asks.tasks.push_back({.id = TaskId(1)});
  asks.tasks[0].request.cpu_millis = 1000;
  Apply(asks);
  Sync();
  expect_pool({0, 0, 0}, "only a task asking for CPU");

  Apply(cluster::JobSubmitted{JobId(2), "slots", 0, {{.id = TaskId(2)}}});
  Sync();
  expect_pool({4, 4, 4}, "a slot task waits");

  ASSERT_THAT(state_.Place(TaskId(2), MachineId(2), 5, changes_), IsOk());
  Sync();
  expect_pool({4, 3, 4}, "it runs on machine 2");

  Apply(cluster::TaskFinished{JobId(2), TaskId(2)});
  Sync();
  expect_pool({0, 0, 0}, "it finished");
}

TEST(PolicyRegistryTest, UnknownPolicyListsKnownOnes) {
  EXPECT_THAT(MakePolicy("quincy-xl"),
              StatusIs(absl::StatusCode::kInvalidArgument, "load-spreading"));
  auto policy = MakePolicy("load-spreading");
  ASSERT_THAT(policy, IsOk());
  EXPECT_EQ((*policy)->name(), "load-spreading");
}

TEST(NetworkBuilderTest, RestoreFromNetworkRecoversEntityMaps) {
  FlowNetwork network;
  NetworkBuilder builder(network);
  builder.EnsureSink();
  NodeId m = builder.EnsureMachineNode(MachineId(4));
  NodeId t = builder.EnsureTaskNode(TaskId(9), 1, MachineId(4));
  NetworkBuilder restored(network);
  ASSERT_THAT(restored.RestoreFromNetwork(), IsOk());
  EXPECT_EQ(restored.FindMachineNode(MachineId(4)), m);
  EXPECT_EQ(restored.FindTaskNode(TaskId(9)), t);
  EXPECT_EQ(restored.sink(), builder.sink());
  // A second sink is corrupt state.
  network.AddNode({.kind = NodeKind::kSink});
  EXPECT_THAT(restored.RestoreFromNetwork(),
              StatusIs(absl::StatusCode::kDataLoss, "second node"));
}

// Tasks that ask for CPU or devices only get arcs where they fit: every
// placement of every round applies (none stale), round after round, and the
// rounds stop only when no waiting task fits anywhere.
TEST_F(LoadSpreadingPolicyTest, TasksAskingForRoomArePlacedOnlyWhereTheyFit) {
  for (uint64_t m = 1; m <= 4; ++m) {
    cluster::MachineAdded added{MachineId(m), "r", {4000, 0, 0}, 4, {}};
    if (m == 4) {
      cluster::AcceleratorGroup gpus;
      gpus.count = 2;
      gpus.model = "a10";
      added.accelerators.push_back(gpus);
    }
    Apply(added);
  }
  cluster::JobSubmitted job{JobId(7), "j", 0, {}};
  for (uint64_t t = 1; t <= 12; ++t) {
    cluster::TaskSpec spec;
    spec.id = TaskId(t);
    spec.request.cpu_millis = 1500;  // two per machine
    job.tasks.push_back(spec);
  }
  for (uint64_t t = 13; t <= 15; ++t) {
    cluster::TaskSpec spec;
    spec.id = TaskId(t);
    spec.accelerator.whole = 1;  // two fit, on machine 4 only
    job.tasks.push_back(spec);
  }
  cluster::TaskSpec plain;
  plain.id = TaskId(16);
  job.tasks.push_back(plain);
  Apply(job);
  RunRoundsUntilQuiet(10);
  for (const auto& [id, machine] : state_.machines()) {
    EXPECT_TRUE(cluster::WithinCapacity(machine)) << id;
  }
  size_t cpu_placed = 0, gpu_placed = 0;
  for (const auto& [id, task] : state_.tasks()) {
    if (!task.running()) {
      // Waits only where it fits nowhere.
      for (const auto& [mid, machine] : state_.machines()) {
        EXPECT_FALSE(cluster::FitTask(machine, task.spec).fits())
            << "task " << id << " waits but fits machine " << mid;
      }
      continue;
    }
    if (id.value() <= 12) ++cpu_placed;
    if (id.value() >= 13 && id.value() <= 15) {
      ++gpu_placed;
      EXPECT_EQ(task.machine, MachineId(4));
    }
  }
  EXPECT_EQ(cpu_placed, 8u);
  EXPECT_EQ(gpu_placed, 2u);
  EXPECT_TRUE(state_.FindTask(TaskId(16))->running());
}

// A waiting task that comes to ask for CPU leaves the pool X for its
// shape's class, and back when it asks for nothing again.
TEST_F(LoadSpreadingPolicyTest, AnUpdatedAskMovesATaskBetweenPoolAndClass) {
  Apply(cluster::MachineAdded{MachineId(1), "r", {4000, 0, 0}, 4, {}});
  SubmitJob7AndSync();
  const NodeId x = builder_.cluster_aggregator();
  const NodeId t71 = builder_.FindTaskNode(TaskId(71));
  EXPECT_TRUE(network_.FindArc(t71, x).has_value());
  Apply(cluster::TaskUpdated{JobId(7), TaskId(71), {1000, 0, 0}, 0});
  Sync();
  EXPECT_FALSE(network_.FindArc(t71, x).has_value());
  size_t class_arcs = 0;
  network_.ForEachOutArc(t71, [&](const ArcView& arc) {
    if (network_.node(arc.dst).kind == NodeKind::kEquivalenceClass) {
      ++class_arcs;
    }
  });
  EXPECT_EQ(class_arcs, 1u);
  Apply(cluster::TaskUpdated{JobId(7), TaskId(71), {}, 0});
  Sync();
  EXPECT_TRUE(network_.FindArc(t71, x).has_value());
  // No class is left: its only task went back to the pool. The room pool
  // stays (room_pool.h), closed: no shape of it waits.
  std::vector<NodeId> classes;
  network_.ForEachNode([&](NodeId id, const NodeData& d) {
    if (d.kind == NodeKind::kEquivalenceClass) classes.push_back(id);
  });
  const NodeId room_pool = builder_.FindAggregatorNode(
      NodeKind::kEquivalenceClass,
      NetworkBuilder::StableKey(RoomPool::kNodeKey));
  EXPECT_EQ(classes, std::vector<NodeId>{room_pool});
  const NodeId m1 = builder_.FindMachineNode(MachineId(1));
  ASSERT_TRUE(network_.FindArc(room_pool, m1).has_value());
  EXPECT_EQ(network_.FindArc(room_pool, m1)->capacity, 0);
}

// A different-machines job is kept apart even when its tasks ask for
// nothing else.
TEST_F(LoadSpreadingPolicyTest, DifferentMachinesHoldsForTasksThatAskNothing) {
  for (uint64_t m = 1; m <= 3; ++m) {
    Apply(cluster::MachineAdded{MachineId(m), "r", {}, 4, {}});
  }
  cluster::JobSubmitted job{JobId(7), "j", 0, {}};
  job.different_machines = true;
  for (uint64_t t = 1; t <= 4; ++t) {
    cluster::TaskSpec spec;
    spec.id = TaskId(t);
    job.tasks.push_back(spec);
  }
  Apply(job);
  RunRoundsUntilQuiet(6);
  std::set<uint64_t> used;
  size_t running = 0;
  for (const auto& [id, task] : state_.tasks()) {
    if (!task.running()) continue;
    ++running;
    EXPECT_TRUE(used.insert(task.machine.value()).second)
        << "two tasks of the job on machine " << task.machine.value();
  }
  EXPECT_EQ(running, 3u);  // one per machine; the fourth waits
}

// The networks load-spreading builds on random clusters (fingerprints
// first taken before it was a built-in profile, re-taken when tasks asking
// for CPU, memory or network alone gained the room pool, room_pool.h, and
// when the slot pool's arcs closed while no task it is for waits or runs;
// the placements of every run stayed the same then; and when the capped
// walk counted held machines toward pooled shapes' share: as many tasks
// placed in every round, on other machines in two runs):
// slot-only tasks and tasks asking for CPU, memory, GPUs or labels,
// different-machines jobs and gangs (starving ones too), synced eagerly or
// as the graph manager does, over rounds that place and finish tasks, with
// random parameters; every round's placements must pass the fit rule. Any
// change to a node, arc, capacity or cost changes a fingerprint.
TEST(LoadSpreadingPinTest, KeepsItsNetworkOnRandomClusters) {
  const std::vector<uint64_t> expected = {
      7840976926184491948ULL,  8710398396940388577ULL,
      9499727905275306771ULL,  2912913896654518013ULL,
      13761761014902853366ULL, 8201536078784395990ULL,
      12608376773000849814ULL, 15669504235015563787ULL,
      7896443814911328556ULL,  3062965127361194460ULL,
      17649793505762795446ULL, 2632594694861322828ULL,
      10195009451649854906ULL, 469242239373428284ULL,
      9244456516629629130ULL,  6076668193586278985ULL,
      5020475390542569824ULL,  16386036074905029597ULL,
      8873752194052723942ULL,  790599170359867615ULL,
      10393035527698010786ULL, 9849320247453046725ULL,
      13211303821886396903ULL, 12488883597646928602ULL};
  std::vector<uint64_t> actual;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    std::mt19937_64 rng(seed);
    LoadSpreadingParams params;
    params.per_task_cost = 1 + static_cast<int64_t>(rng() % 40);
    params.min_shape_machines = 1 + static_cast<int64_t>(rng() % 12);
    params.shape_machines_per_task = 1 + static_cast<int64_t>(rng() % 4);
    params.gang_first_after_s = static_cast<double>(rng() % 3);
    LoadSpreadingPolicy policy(params);
    testing::PinnedRun run(policy, /*deferred=*/seed % 2 == 0);
    const auto apply = [&](cluster::EventBody body) {
      ASSERT_THAT(run.Apply(body), IsOk());
    };
    const auto sync = [&]() { ASSERT_THAT(run.Sync(), IsOk()); };
    const int machines = 3 + static_cast<int>(rng() % 30);
    for (int m = 1; m <= machines; ++m) {
      cluster::MachineAdded added{
          MachineId(static_cast<uint64_t>(m)),
          absl::StrCat("r", rng() % 3),
          {rng() % 5 == 0 ? 0 : static_cast<int64_t>(2000 + rng() % 14000),
           static_cast<int64_t>(rng() % 64) * (int64_t{1} << 30), 0},
          static_cast<uint32_t>(1 + rng() % 20),
          {{"zone", rng() % 2 ? "a" : "b"}}};
      if (rng() % 3 == 0) {
        added.accelerators.push_back(
            {static_cast<uint32_t>(1 + rng() % 4), "A10", 1000, 0});
      }
      apply(added);
    }
    uint64_t next_task = 1;
    for (int wave = 0; wave < 3; ++wave) {
      const int jobs = 1 + static_cast<int>(rng() % 4);
      for (int j = 0; j < jobs; ++j) {
        cluster::JobSubmitted job{
            JobId(static_cast<uint64_t>(100 * wave + j + 1)), "j", 0, {}};
        job.different_machines = rng() % 6 == 0;
        const int n = 1 + static_cast<int>(rng() % 14);
        if (rng() % 5 == 0) job.min_members = static_cast<uint32_t>(n);
        const bool asks = rng() % 2 == 0;
        for (int t = 0; t < n; ++t) {
          cluster::TaskSpec spec;
          spec.id = TaskId(next_task++);
          if (asks) {
            spec.request.cpu_millis = static_cast<int64_t>(rng() % 4000);
            spec.request.memory_bytes =
                static_cast<int64_t>(rng() % 8) * (int64_t{1} << 30);
            if (rng() % 4 == 0) spec.accelerator.milli = 250;
            if (rng() % 6 == 0) {
              spec.accelerator.milli = 0;
              spec.accelerator.whole = 1;
            }
            if (rng() % 5 == 0) spec.required_labels = {{"zone", "a"}};
          }
          if (rng() % 3 == 0) spec.preferred_labels = {{"zone", "b"}};
          job.tasks.push_back(spec);
        }
        apply(job);
      }
      sync();
      // Two rounds, then some running tasks finish; later waves come
      // seconds later, so gangs may starve.
      for (int round = 0; round < 2; ++round) {
        ASSERT_THAT(run.Round().status(), IsOk());
      }
      ASSERT_THAT(run.FinishSomeRunning(rng, 4), IsOk());
      run.now_us += 2'000'000;
      sync();
    }
    actual.push_back(run.fingerprint);
  }
  EXPECT_EQ(actual, expected) << "now: " << absl::StrJoin(actual, ", ");
}

}  // namespace
}  // namespace flowsched::flow
