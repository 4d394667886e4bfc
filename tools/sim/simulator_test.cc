#include "tools/sim/simulator.h"

#include <set>

#include "gtest/gtest.h"
#include "services/cluster/cluster_state.h"
#include "tools/sim/contender.h"
#include "tools/sim/report.h"
#include "tools/sim/synthetic.h"
#include "tools/sim/trace_reader.h"

namespace flowsched::sim {
namespace {

constexpr char kTraceDir[] =
    FLOWSCHED_SOURCE_DIR "/tests/data/google_trace_tiny";

void ExpectSane(const SimResult& r, const Workload& w, uint32_t slots) {
  EXPECT_EQ(r.capacity_violations, 0u) << r.scheduler;
  EXPECT_EQ(r.placements.size() + r.unplaced, r.submitted) << r.scheduler;
  std::set<uint64_t> seen;
  for (const PlacementRecord& p : r.placements) {
    EXPECT_GE(p.placed_us, p.submit_us);
    EXPECT_TRUE(seen.insert(p.task).second) << "task placed twice: " << p.task;
  }
  for (const RoundRecord& round : r.rounds) {
    EXPECT_LE(round.running, w.machines.size() * slots);
    EXPECT_GE(round.runtime_ms, 0);
  }
  EXPECT_GT(r.locality.total(), 0);
}

TEST(SimulatorTest, SyntheticFlowAndBaselinePlaceEverythingThatFits) {
  const SyntheticSpec spec{.machines = 120,
                           .slots_per_machine = 8,
                           .utilisation = 0.6,
                           .duration_us = 2 * 3'600'000'000LL,
                           .seed = 3};
  const Workload w = GenerateSynthetic(spec);
  const SimOptions options{.slots_per_machine = 8, .speedup = 300};
  for (const std::string scheduler : {"flow:quincy-qfp", "greedy"}) {
    auto r = Simulate(w, scheduler, options);
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectSane(*r, w, 8);
    EXPECT_GT(r->submitted, 0u);
    EXPECT_EQ(r->unplaced, 0u) << scheduler;
    EXPECT_EQ(r->initial_placed + r->placements.size(), w.tasks.size())
        << scheduler;
    const Summary s = Summarise(*r);
    EXPECT_EQ(s.placed, r->placements.size());
    EXPECT_GT(s.sim_s, 0);
    EXPECT_NEAR(s.local + s.rack + s.cross, 1.0, 1e-9);
  }
}

TEST(SimulatorTest, TinyTraceRunsInCpuMemoryModelToo) {
  TraceReader reader(TraceOptions{});
  ASSERT_TRUE(reader
                  .ReadFiles(std::string(kTraceDir) + "/machine_events.csv",
                             std::string(kTraceDir) + "/task_events.csv")
                  .ok());
  Workload w = reader.Build();
  AssignInputBlocks(w, 1, kDefaultInputReplicas);
  for (const auto& [model, policy] :
       {std::pair{Model::kSlots, "flow:quincy-qfp"},
        std::pair{Model::kCpuMemory, "flow:cpu-memory"},
        std::pair{Model::kSlots, "greedy-fair"},
        std::pair{Model::kCpuMemory, "filter-score"}}) {
    auto r = Simulate(w, policy, SimOptions{.model = model});
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectSane(*r, w, model == Model::kSlots ? 13 : kCpuMemorySlots);
    EXPECT_EQ(r->initial_placed, 2u) << policy;
    EXPECT_EQ(r->placements.size(), 8u) << policy;
    EXPECT_EQ(r->unplaced, 0u) << policy;
    EXPECT_EQ(r->rejected_events, 0u) << policy;
  }
}

// The warm-up places the time-0 population as started `started_at` (in
// the past): their running time, and so Quincy's theta, starts at their
// age. Later placements start at the round's time.
TEST(SimulatorTest, ApplyDecisionsStartsPlacementsWhenToldTo) {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  ASSERT_TRUE(state
                  .Apply({"e", 0, "t",
                          cluster::MachineAdded{MachineId(1), "r", {}, 2, {}}},
                         0, changes)
                  .ok());
  cluster::JobSubmitted job{JobId(1), "j", 0, {}};
  job.tasks.push_back({.id = TaskId(1)});
  job.tasks.push_back({.id = TaskId(2)});
  ASSERT_TRUE(state.Apply({"e", 0, "t", job}, 0, changes).ok());
  RoundDecisions aged;
  aged.decisions.push_back(
      {TaskId(1), JobId(1), MachineId(1), MachineId(), core::Action::kPlace});
  const AppliedDecisions first = ApplyDecisions(
      aged, state, 0, changes, [](TaskId) { return -5'000'000; });
  EXPECT_EQ(first.placed.size(), 1u);
  EXPECT_EQ(state.FindTask(TaskId(1))->RunMicros(1'000'000), 6'000'000);
  RoundDecisions fresh;
  fresh.decisions.push_back(
      {TaskId(2), JobId(1), MachineId(1), MachineId(), core::Action::kPlace});
  ApplyDecisions(fresh, state, 2'000'000, changes);
  EXPECT_EQ(state.FindTask(TaskId(2))->RunMicros(3'000'000), 1'000'000);
}

// Migrations of a QFP run of a two-task workload in which one task ends.
uint64_t QfpMigrations(const Workload& w, const SimOptions& options) {
  auto r = Simulate(w, "flow:quincy-qfp", options);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return ~uint64_t{0};
  EXPECT_EQ(r->finished, 1u);
  return r->migrated;
}

// Two one-slot machines in two racks; both tasks read only from machine 1.
// The heavier reader gets it, the other runs on machine 2 across the core
// (2,048 cost units) until the first finishes. Moving then saves its input:
// worth it for a task that has run 0.5 s (512 units of theta), not for one
// that has done 150 s of work. At 300x, 150 trace seconds are 0.5 s on the
// simulated clock, whether the work is done during the run (the first task
// finishes 150 trace seconds in) or before it (the second is 150 s old at
// time 0, its age, which the warm-up must count in the same clock).
TEST(SimulatorTest, TheTraceClockPricesWorkDoneInTraceTime) {
  constexpr int64_t kBlock = int64_t{256} << 20;
  struct Case {
    int64_t first_runs_us, second_age_us;
  };
  for (const Case c : {Case{150'000'000, 0}, Case{300, 150'000'000}}) {
    Workload w;
    w.machines = {SimMachine{.id = 1, .rack = "a"},
                  SimMachine{.id = 2, .rack = "b"}};
    auto task = [&](uint64_t id, int64_t blocks, int64_t duration_us) {
      return SimTask{
          .task_id = id,
          .job_id = 1,
          .duration_us = duration_us,
          .input = {{.machine = MachineId(1), .bytes = blocks * kBlock}},
          .input_bytes = blocks * kBlock};
    };
    w.tasks = {task(1, 6, c.first_runs_us), task(2, 4, kForever)};
    w.tasks[1].age_us = c.second_age_us;
    for (const auto clock : {SimOptions::PolicyClock::kSimulated,
                             SimOptions::PolicyClock::kTrace}) {
      const SimOptions options{.slots_per_machine = 1,
                               .speedup = 300,
                               .policy_clock = clock,
                               .horizon_us = 2'000'000};
      EXPECT_EQ(QfpMigrations(w, options),
                clock == SimOptions::PolicyClock::kSimulated ? 1u : 0u)
          << "first runs " << c.first_runs_us << " us, second aged "
          << c.second_age_us << " us";
    }
  }
}

// Rounds run back to back, so a task the last round placed has run for 0 s
// when the next round starts. Task 2 arrives at 1 us while machine 1,
// where its input is, runs task 1 (an hour old, its input there too), and
// is placed on machine 2; task 1 ends at 2 us, during that round (a round
// lasts at least 1 us). Priced at the next round's start, moving task 2 to
// machine 1 loses nothing and QFP does it for the 512 units of reading one
// block across the core; priced when the move would happen, a round
// later, it loses at least 1 us = 1 trace second of work (1,024 units).
TEST(SimulatorTest, PricingAtTheDecisionCountsTheWorkAMigrationLoses) {
  constexpr int64_t kBlock = int64_t{256} << 20;
  const std::vector<cluster::DataLocality> on_machine_1 = {
      {.machine = MachineId(1), .bytes = kBlock}};
  Workload w;
  w.machines = {SimMachine{.id = 1, .rack = "a"},
                SimMachine{.id = 2, .rack = "b"}};
  w.tasks = {SimTask{.task_id = 1,
                     .job_id = 1,
                     .duration_us = 2'000'000,
                     .age_us = 3'600'000'000,
                     .input = on_machine_1,
                     .input_bytes = kBlock},
             SimTask{.task_id = 2,
                     .job_id = 2,
                     .submit_us = 1'000'000,
                     .duration_us = kForever,
                     .input = on_machine_1,
                     .input_bytes = kBlock}};
  for (const auto price_at :
       {SimOptions::PriceAt::kRoundStart, SimOptions::PriceAt::kDecision}) {
    const SimOptions options{.slots_per_machine = 1,
                             .speedup = 1e6,
                             .price_at = price_at,
                             .horizon_us = 1'000'000};
    EXPECT_EQ(QfpMigrations(w, options),
              price_at == SimOptions::PriceAt::kRoundStart ? 1u : 0u);
  }
}

TEST(SimulatorTest, UnknownSchedulerOrSolverIsInvalidArgument) {
  const Workload w = GenerateSynthetic({.machines = 4, .duration_us = 1});
  EXPECT_EQ(Simulate(w, "flow:nope", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Simulate(w, "flow:quincy-qfp", {.solver = "nope"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Simulate(w, "fifo", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace flowsched::sim
