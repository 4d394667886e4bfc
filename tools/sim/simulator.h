#pragma once

// A discrete-event simulation of one scheduler on one workload, in
// simulated time, as Firmament's simulator does it (OSDI 2016 section 7):
// a scheduling round starts as soon as the previous one ended (or, when
// nothing changed, at the next event); the round sees the events up to its
// start, and its measured wall-clock runtime (policy sync, solve, check,
// extraction, or a baseline's Schedule) passes in simulated time before its
// decisions take effect. So a task's placement latency (submission to
// placement, simulated time) includes waiting for the round in progress
// plus the round that places it. Events that happened during a round are
// applied after its decisions.
//
// The time-0 population is placed first by warm-up rounds that take no
// simulated time (recorded, flagged), so measurement starts from the
// running steady state as in Firmament's trace replay.
//
// Placed tasks run for their (sped-up) runtime and then finish; a
// preempted or migrated task starts over (its runtime counts from the new
// placement), and a task of a removed machine waits again.

#include <cmath>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/sim/metrics.h"
#include "tools/sim/workload.h"

namespace flowsched::sim {

enum class Model {
  kSlots,      // machines have slots_per_machine slots; no CPU/memory
  kCpuMemory,  // machines have CPU and memory (normalised x kFull*); many slots
};

inline constexpr int64_t kFullCpuMillis = 64'000;                // 1.0 CPU
inline constexpr int64_t kFullMemoryBytes = int64_t{256} << 30;  // 1.0 memory
inline constexpr uint32_t kCpuMemorySlots = 1'000;
// A workload's normalised CPU or memory in the cpu-mem model's units.
[[nodiscard]] inline int64_t CpuMillis(double normalised) {
  return std::llround(normalised * static_cast<double>(kFullCpuMillis));
}
[[nodiscard]] inline int64_t MemoryBytes(double normalised) {
  return std::llround(normalised * static_cast<double>(kFullMemoryBytes));
}

struct SimOptions {
  Model model = Model::kSlots;
  uint32_t slots_per_machine = 13;
  // Arrivals, runtimes and machine events happen `speedup` times sooner.
  double speedup = 1.0;
  // The clock the cluster state, and so the policy, sees. kTrace: the
  // workload's own time (simulated time x speedup), so a task's wait and
  // run times, which Quincy prices (omega * nu, d* - theta), are what they
  // are in the trace and a sped-up replay asks the policy the same
  // questions faster. kSimulated: the accelerated clock itself, under
  // which, at 300x, a task that has done five minutes of work looks one
  // second old and is migrated for a cheaper input.
  enum class PolicyClock { kTrace, kSimulated };
  PolicyClock policy_clock = PolicyClock::kTrace;
  // The moment a round prices the network at. kDecision: when its
  // decisions will apply, estimated as its start plus the previous timed
  // round's length (never earlier than the last round's, so up to the
  // longest recent round ahead; the first round after the warm-up looks
  // nothing ahead). A migration or preemption decided now loses the work
  // done until it happens, and a sped-up replay stretches that: at 300x a 300
  // ms round is 90 s of trace work, which pricing at the round's start
  // (kRoundStart) counts as 0 for every task the round before placed, so QFP
  // moved them back and forth (at 12,500 machines with replicated inputs: 45
  // migrations in a round growing to 3,672, rounds from 0.17 to 2 s). At 1x a
  // round of 20-30 ms is below theta's first pricing step
  // (QuincyNetworkParams::theta_step_us), so a task the last round placed
  // is still priced at theta = 0.
  enum class PriceAt { kDecision, kRoundStart };
  PriceAt price_at = PriceAt::kDecision;
  // Simulated time (after speedup) after which no event is applied; then
  // rounds continue until nothing changes (at most kSettleRounds). 0: until
  // the last arrival or machine event.
  int64_t horizon_us = 0;
  // "incremental" (the solver worker's path) or a solver registry name.
  std::string solver = "incremental";
  // Progress lines on `progress` (if set) every this many wall seconds.
  std::ostream* progress = nullptr;
  double progress_every_s = 2.0;
  // Stop after this many wall seconds (0: no limit); the result is marked
  // truncated. For full-scale runs whose rounds take long.
  double max_wall_s = 0;
  // Fairness (FairShareJain) is sampled every this many rounds.
  uint32_t fairness_every = 10;
  // The first export_rounds networks of the flow scheduler are written to
  // export_dir as DIMACS (round-<k>.dimacs) when export_dir is set.
  std::string export_dir;
  uint32_t export_rounds = 0;
};

inline constexpr int kSettleRounds = 20;

struct RoundRecord {
  uint64_t round = 0;
  int64_t start_us = 0;   // simulated
  double runtime_ms = 0;  // wall clock of the whole round
  double sync_ms = 0, solve_ms = 0, check_ms = 0, extract_ms = 0;
  std::string algorithm;
  uint64_t waiting = 0;  // tasks waiting when the round started
  uint64_t running = 0;  // tasks running after it was applied
  uint64_t placed = 0, preempted = 0, migrated = 0, stale = 0;
  double slot_utilisation = 0;
  double cpu_utilisation = 0;  // kCpuMemory only
  double fairness = 1;         // last FairShareJain sample
  bool warmup = false;         // placed the time-0 population, off the clock
};

struct PlacementRecord {
  uint64_t task = 0, job = 0;
  int64_t submit_us = 0, placed_us = 0;
  [[nodiscard]] double latency_ms() const {
    return static_cast<double>(placed_us - submit_us) / 1000.0;
  }
};

struct SimResult {
  std::string scheduler;
  std::vector<RoundRecord> rounds;
  // First placement of every task submitted after time 0 (tasks present at
  // time 0 are the initial population: not a latency sample).
  std::vector<PlacementRecord> placements;
  uint64_t initial_placed = 0;
  uint64_t submitted = 0;  // after time 0, up to the horizon
  uint64_t unplaced = 0;   // of those, never placed by the end
  uint64_t finished = 0;
  uint64_t rejected_events = 0;  // events the cluster state refused
  uint64_t preempted = 0, migrated = 0, stale = 0;
  uint64_t capacity_violations = 0;  // machines seen over (WithinCapacity)
  LocalityBytes locality;            // input of every placement
  LocalityBytes warmup_locality;     // input of the tasks running after warm-up
  int64_t sim_end_us = 0;
  double wall_s = 0;       // the simulation after the warm-up
  double busy_s = 0;       // sum of round runtimes (after warm-up)
  double warmup_s = 0;     // wall time of the warm-up rounds
  bool truncated = false;  // stopped by max_wall_s
};

// InvalidArgument for an unknown scheduler or solver; Internal if a round
// fails (e.g. the checker rejects a flow).
absl::StatusOr<SimResult> Simulate(const Workload& workload,
                                   const std::string& scheduler,
                                   const SimOptions& options);

}  // namespace flowsched::sim
