#include "services/core/incremental_mirror.h"

#include <map>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/cluster/cluster_state.h"
#include "services/common/status_matchers.h"
#include "services/flow/load_spreading_policy.h"
#include "services/flow/network_builder.h"
#include "services/flow/placement_extractor.h"
#include "services/solver/cost_scaling.h"
#include "services/solver/flow_checker.h"

namespace flowsched::core {
namespace {

using ::flowsched::testing::IsOk;

// The graph manager side (cluster state, load-spreading policy, a primary
// network recording its changes) and the worker side (replica and mirror).
// The parameter is the mirror's race delay: the default (the repair alone
// first), 0 (Firmament's race from the start) and 1 us (the delay runs out
// in every round that needs a Dijkstra, so the stopped repair resumes in
// the race).
class IncrementalMirrorTest : public ::testing::TestWithParam<int64_t> {
 protected:
  IncrementalMirrorTest() { primary.set_record_changes(true); }

  cluster::ClusterState state;
  flow::FlowNetwork primary;
  flow::NetworkBuilder builder{primary};
  flow::LoadSpreadingPolicy policy;
  flow::FlowNetwork replica;
  // The delay as set: the parameter is what the test exercises.
  IncrementalMirror mirror{std::make_unique<solver::CostScaling>(),
                           MirrorOptions{.race_delay_us = GetParam(),
                                         .race_after_scratch_share = 0}};
};

INSTANTIATE_TEST_SUITE_P(RaceDelays, IncrementalMirrorTest,
                         ::testing::Values(MirrorOptions{}.race_delay_us, 0,
                                           1));

// The graph manager side: cluster state and policy produce the change log
// that rounds carry; the mirror replays it into a replica and its solver.
TEST_P(IncrementalMirrorTest, EveryRoundIsOptimalAndMatchesAFromScratchSolve) {
  std::mt19937_64 rng(11);
  uint64_t next_task = 1, next_job = 1;
  std::vector<uint64_t> live;
  std::map<uint64_t, uint64_t> job_of;
  int incremental_rounds = 0;
  int from_solver_rounds = 0;
  int full_rounds = 0;
  int partial_rounds = 0;
  MirrorResult kept;

  for (int round = 0; round < 60; ++round) {
    cluster::ChangeSet changes;
    auto apply = [&](cluster::EventBody body) {
      cluster::ChangeSet c;
      if (state.Apply({"e", 0, "t", body}, 1, c).ok()) changes.Merge(c);
    };
    if (round == 0) {
      for (uint64_t m = 1; m <= 30; ++m) {
        apply(cluster::MachineAdded{MachineId(m), "r", {}, 4, {}});
      }
    }
    // Arrivals and completions.
    const int arrivals = std::uniform_int_distribution<int>(0, 12)(rng);
    cluster::JobSubmitted job{JobId(next_job), "j", 0, {}};
    for (int t = 0; t < arrivals; ++t) {
      job.tasks.push_back({.id = TaskId(next_task)});
      job_of[next_task] = next_job;
      live.push_back(next_task++);
    }
    if (arrivals > 0) {
      apply(job);
      ++next_job;
    }
    for (int c = 0; c < 6 && !live.empty(); ++c) {
      const size_t i =
          std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng);
      apply(cluster::TaskFinished{JobId(job_of[live[i]]), TaskId(live[i])});
      live.erase(live.begin() + static_cast<long>(i));
    }
    if (round % 17 == 9)
      apply(cluster::MachineFailed{MachineId(round % 30 + 1), ""});
    ASSERT_THAT(policy.Sync(changes, state, builder), IsOk());
    for (const flow::GraphChange& change : primary.TakeChanges()) {
      ASSERT_THAT(mirror.Apply(change, replica), IsOk());
    }

    // Even rounds reuse one result's buffers (as the solver worker does),
    // odd rounds get a fresh one: both must carry the whole round. Every
    // third round solves without the export, as the worker does, and
    // exports afterwards for the comparisons below.
    MirrorResult fresh;
    MirrorResult* result = &kept;
    if (round % 3 == 2) {
      ASSERT_THAT(mirror.SolveWithoutExport(kept), IsOk());
      from_solver_rounds += !kept.exported;
    } else if (round % 2 == 0) {
      ASSERT_THAT(mirror.Solve(kept), IsOk());
    } else {
      auto solved = mirror.Solve();
      ASSERT_THAT(solved, IsOk());
      fresh = std::move(*solved);
      result = &fresh;
    }
    ASSERT_EQ(result->outcome, solver::McmfOutcome::kOptimal);
    // The certificate passes the round, checking at most the whole
    // network (less when little changed).
    ASSERT_THAT(mirror.Certify(*result, replica), IsOk()) << "round " << round;
    full_rounds += mirror.last_certify().full;
    EXPECT_FALSE(mirror.last_certify().report_gap) << "round " << round;
    mirror.ExportResult(*result);
    EXPECT_THAT(solver::CheckOptimalFlow(result->problem, result->solution),
                IsOk());
    EXPECT_LE(mirror.last_certify().arcs_checked, result->problem.arcs.size());
    partial_rounds +=
        mirror.last_certify().arcs_checked < result->problem.arcs.size();
    incremental_rounds += result->algorithm == "incremental";
    // The same optimum as cost scaling from scratch on the replica.
    solver::McmfProblem scratch;
    std::vector<flow::ArcSlot> slots;
    replica.ExportProblem(scratch, slots);
    auto reference = solver::CostScaling().Solve(scratch);
    ASSERT_THAT(reference, IsOk());
    EXPECT_EQ(result->total_cost, reference->total_cost) << "round " << round;
    // Placements come out of the certified copy, whose flow per slot is
    // the solver's.
    const std::vector<int64_t>& flow_by_slot = mirror.certified_flow_by_slot();
    std::vector<int64_t> exported_flow;
    mirror.FlowBySlot(replica, *result, exported_flow);
    EXPECT_EQ(exported_flow, flow_by_slot) << "round " << round;
    const std::vector<uint64_t>& bits = mirror.certified_slots_with_flow();
    ASSERT_EQ(bits.size(), (flow_by_slot.size() + 63) / 64);
    for (size_t slot = 0; slot < flow_by_slot.size(); ++slot) {
      EXPECT_EQ((bits[slot / 64] >> (slot % 64)) & 1,
                flow_by_slot[slot] > 0 ? 1u : 0u)
          << "slot " << slot;
    }
    auto placements = flow::ExtractPlacements(
        replica, flow_by_slot, &mirror.certified_slots_with_flow());
    ASSERT_THAT(placements, IsOk());
    EXPECT_EQ(placements->size(), state.tasks().size());
    // Apply the decisions so later rounds see running tasks.
    cluster::ChangeSet decided;
    for (const flow::TaskPlacement& p : *placements) {
      if (p.machine_id != 0 && p.running_on == 0) {
        ASSERT_THAT(
            state.Place(TaskId(p.task_id), MachineId(p.machine_id), 2, decided),
            IsOk());
      }
    }
    ASSERT_THAT(policy.Sync(decided, state, builder), IsOk());
    for (const flow::GraphChange& change : primary.TakeChanges()) {
      ASSERT_THAT(mirror.Apply(change, replica), IsOk());
    }
  }
  // After the cold start, rounds are raced; on a network this small the
  // incremental repair should win most of them.
  EXPECT_GT(incremental_rounds, 10);
  EXPECT_GT(from_solver_rounds, 5);
  // The cold start and races won from scratch are checked in full, most
  // repaired rounds only where they changed.
  EXPECT_GE(full_rounds, 1);
  EXPECT_LT(full_rounds, 30);
  EXPECT_GT(partial_rounds, 15);
}

// A change re-sends a machine's whole X->M arc, but a start only flips one
// slot piece's capacity (load_spreading_policy.h); the mirror hands the
// solver that piece and the task's own arcs, not all 13 pieces.
TEST_P(IncrementalMirrorTest, OnlyChangedPiecesReachTheSolver) {
  auto sync = [&](const cluster::ChangeSet& changes) {
    ASSERT_THAT(policy.Sync(changes, state, builder), IsOk());
    for (const flow::GraphChange& change : primary.TakeChanges()) {
      ASSERT_THAT(mirror.Apply(change, replica), IsOk());
    }
  };
  cluster::ChangeSet changes;
  ASSERT_THAT(
      state.Apply(
          {"e", 0, "t", cluster::MachineAdded{MachineId(1), "r", {}, 13, {}}},
          1, changes),
      IsOk());
  ASSERT_THAT(state.Apply({"e", 0, "t",
                           cluster::JobSubmitted{
                               JobId(1), "j", 0, {{.id = TaskId(1)}}}},
                          1, changes),
              IsOk());
  sync(changes);
  ASSERT_THAT(mirror.Solve(), IsOk());
  const uint64_t before = mirror.pieces_sent();
  cluster::ChangeSet placed;
  ASSERT_THAT(state.Place(TaskId(1), MachineId(1), 2, placed), IsOk());
  sync(placed);
  // The task's arc to U_1 (now the preemption cost), its new arc to the
  // machine, and slot 0 of X->M closing. Its arc to X is removed.
  EXPECT_EQ(mirror.pieces_sent() - before, 3u);
  auto result = mirror.Solve();
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->outcome, solver::McmfOutcome::kOptimal);
  // The closed slot piece is not in the solver: 12 open pieces of X->M,
  // M->S, task->M, task->U_1 and U_1->S.
  EXPECT_EQ(result->problem.arcs.size(), 16u);
}

// Load spreading over `machines` machines of 4 slots and a job of three
// tasks per machine, applied to `mirror` and its replica `net`.
void BuildLoadSpreading(IncrementalMirror& mirror, flow::FlowNetwork& net,
                        int machines) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  flow::FlowNetwork primary;
  primary.set_record_changes(true);
  flow::NetworkBuilder builder{primary};
  flow::LoadSpreadingPolicy policy;
  for (int m = 1; m <= machines; ++m) {
    ASSERT_THAT(
        state.Apply(
            {"e", 0, "t", cluster::MachineAdded{MachineId(m), "r", {}, 4, {}}},
            1, changes),
        IsOk());
  }
  cluster::JobSubmitted job{JobId(1), "j", 0, {}};
  for (int t = 1; t <= 3 * machines; ++t) {
    job.tasks.push_back({.id = TaskId(t)});
  }
  ASSERT_THAT(state.Apply({"e", 0, "t", job}, 1, changes), IsOk());
  ASSERT_THAT(policy.Sync(changes, state, builder), IsOk());
  for (const flow::GraphChange& change : primary.TakeChanges()) {
    ASSERT_THAT(mirror.Apply(change, net), IsOk());
  }
}

// A cold start times the solve from scratch; the race delay then grows to
// the configured share of it, scaled by the arcs now, and a delay of 0
// (race at once) stays 0.
TEST(IncrementalMirrorRaceDelayTest, GrowsToAShareOfTheTimedScratchSolve) {
  constexpr int64_t kDelayUs = 1;
  IncrementalMirror raised{std::make_unique<solver::CostScaling>(),
                           MirrorOptions{.race_delay_us = kDelayUs,
                                         .race_after_scratch_share = 1e6,
                                         .race_timed_min_arcs = 1}};
  flow::FlowNetwork net;
  BuildLoadSpreading(raised, net, 200);
  EXPECT_EQ(raised.race_delay_us(), kDelayUs);  // nothing timed yet
  ASSERT_THAT(raised.Solve(), IsOk());
  // Any solve of 200 machines' network takes over a microsecond, so a
  // million times it per arc count is far above the configured delay.
  EXPECT_GT(raised.race_delay_us(), 1'000);

  IncrementalMirror at_once{std::make_unique<solver::CostScaling>(),
                            MirrorOptions{.race_delay_us = 0}};
  flow::FlowNetwork other;
  BuildLoadSpreading(at_once, other, 200);
  ASSERT_THAT(at_once.Solve(), IsOk());
  EXPECT_EQ(at_once.race_delay_us(), 0);

  // The default floor: a network this small is not timed.
  IncrementalMirror small{std::make_unique<solver::CostScaling>(),
                          MirrorOptions{.race_delay_us = kDelayUs,
                                        .race_after_scratch_share = 1e6}};
  flow::FlowNetwork third;
  BuildLoadSpreading(small, third, 200);
  ASSERT_THAT(small.Solve(), IsOk());
  EXPECT_EQ(small.race_delay_us(), kDelayUs);
}

// A cold solver that must not be asked.
class RefusingSolver final : public solver::McmfSolver {
 public:
  absl::StatusOr<solver::McmfSolution> Solve(
      const solver::McmfProblem&) override {
    return absl::InternalError("the cold solver ran");
  }
  std::string_view name() const override { return "refusing"; }
};

// The first solve after a Reset is the solver's own primal-dual in place,
// raced against cost scaling from scratch (whichever
// wins); the cold solver runs only when that is turned off. Either way the
// result is optimal, the first Certify reads and checks everything, and
// later rounds repair from it.
TEST(IncrementalMirrorFirstSolveTest, InPlaceOrByTheColdSolver) {
  for (const bool in_place : {true, false}) {
    SCOPED_TRACE(in_place ? "in place" : "cold solver");
    std::unique_ptr<solver::McmfSolver> cold;
    if (in_place) {
      cold = std::make_unique<RefusingSolver>();
    } else {
      cold = std::make_unique<solver::CostScaling>();
    }
    IncrementalMirror mirror{std::move(cold),
                             MirrorOptions{.first_solve_in_place = in_place}};
    flow::FlowNetwork net;
    BuildLoadSpreading(mirror, net, 300);
    MirrorResult result;
    ASSERT_THAT(mirror.Solve(result), IsOk());
    ASSERT_EQ(result.outcome, solver::McmfOutcome::kOptimal);
    if (!in_place) {
      EXPECT_EQ(result.algorithm, "cost_scaling");
    }
    auto scratch = solver::CostScaling().Solve(result.problem);
    ASSERT_THAT(scratch, IsOk());
    EXPECT_EQ(result.total_cost, scratch->total_cost);
    EXPECT_THAT(solver::CheckOptimalFlow(result.problem, result.solution),
                IsOk());
    ASSERT_THAT(mirror.Certify(result, net), IsOk());
    EXPECT_TRUE(mirror.last_certify().full);
    ASSERT_THAT(mirror.Solve(result), IsOk());
    EXPECT_EQ(result.algorithm, "incremental");
    EXPECT_EQ(result.total_cost, scratch->total_cost);
  }
}

// Everything is read and checked again once full_check_every rounds and
// full_check_min_interval_us have both passed.
TEST(IncrementalMirrorFullCheckTest, NeedsTheRoundsAndTheInterval) {
  const auto full_rounds = [](int64_t interval_us) {
    IncrementalMirror mirror{
        std::make_unique<solver::CostScaling>(),
        MirrorOptions{.full_check_every = 4,
                      .full_check_min_interval_us = interval_us}};
    flow::FlowNetwork net;
    BuildLoadSpreading(mirror, net, 20);
    std::vector<int> full;
    MirrorResult result;
    for (int round = 1; round <= 12; ++round) {
      EXPECT_THAT(mirror.SolveWithoutExport(result), IsOk());
      EXPECT_THAT(mirror.Certify(result, net), IsOk());
      if (mirror.last_certify().full) full.push_back(round);
    }
    return full;
  };
  EXPECT_THAT(full_rounds(0), ::testing::ElementsAre(1, 5, 9));
  EXPECT_THAT(full_rounds(3'600'000'000), ::testing::ElementsAre(1));
}

}  // namespace
}  // namespace flowsched::core
