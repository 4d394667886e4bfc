#pragma once

// Synthetic scheduling networks for solver benchmarks, produced directly as
// solver::McmfProblem (no cluster state, no FlowNetwork), in the two shapes
// the Firmament paper (OSDI 2016, section 3.3, figure 6) uses:
//
// Quincy (figure 6b; Quincy SOSP 2009 section 4 and appendix):
//   waiting task --(wait-time cost)--> U_job --(tasks of job)--> S
//   waiting task --(alpha: worst-case data cost)--> X
//   waiting task --(gamma / rho: data-locality cost)--> 2-7 preferred
//                  machines or racks (gamma, rho < alpha)
//   X --(slots of rack)--> R_r --(slots)--> M --(slots)--> S
//   running task --(d* - p*: can be negative)--> its machine, and the
//                  arcs it had while waiting (its data does not move when
//                  it starts; leaving through U_job is a preemption)
// Load spreading (figure 6a, as services/flow/load_spreading_policy.h):
//   waiting task --(0)--> X --(convex: k-th new task on M costs
//        per_task_cost * (running(M) + k), one parallel arc per piece)--> M
//   M --(slots)--> S; task --(unscheduled_cost)--> U_job --> S
//   running task --(0)--> its machine, --(preemption_cost)--> U_job
// Sink supply = -(number of tasks); every task can stay unscheduled, so the
// networks are always feasible, also above 100% utilisation.
//
// Stable indexing (for warm-start solvers; see ClusterNetwork): node and arc
// indices are slots. Infrastructure nodes come first and never move:
//   0 = sink, 1 = X, then racks, then machines; jobs' U nodes and task nodes
//   follow, each allocated in the lowest free slot (like
//   flow::FlowNetwork::AddNode).
// A removed node keeps its slot with supply 0 and no live arcs. A removed
// arc keeps its slot as a zero-capacity, zero-cost self-loop on the sink
// (which no solver can route flow over) until a later arc reuses the slot,
// again lowest first. Each load-spreading machine owns slots_per_machine
// X->M piece arcs for its whole life (capacity 0 beyond its free slots), so
// piece arcs never move either. Hence between two snapshots an index keeps
// its meaning unless it appears in the round's changed_nodes/changed_arcs.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "services/solver/mcmf_problem.h"

namespace flowsched::bench {

enum class NetworkShape { kQuincy, kLoadSpreading };

// How job sizes are drawn around ClusterShape::mean_tasks_per_job (m).
enum class JobSizes {
  kUniform,      // uniform in [1, 2m - 1]
  kGeometric,    // geometric with mean m (many small jobs)
  kHeavyTailed,  // Pareto, shape 1.1, mean about m, capped at 50m
  kFixed,        // every job has m tasks
};

struct ClusterShape {
  NetworkShape shape = NetworkShape::kQuincy;
  uint32_t machines = 1250;
  uint32_t slots_per_machine = 12;
  uint32_t machines_per_rack = 40;
  // Tasks / slots; above 1 the surplus can only stay unscheduled.
  double utilisation = 0.9;
  // Fraction of min(tasks, slots) already running when the network is
  // built; the rest of the tasks wait. Firmament's steady state has most
  // tasks running and a few waiting per round.
  double running_fraction = 0.9;
  // Job sizes are uniform in [1, 2 * mean - 1]; the Google trace's 12,500
  // machines run ~150,000 tasks in ~1,800 jobs (Firmament section 2.3).
  uint32_t mean_tasks_per_job = 83;
  JobSizes job_sizes = JobSizes::kUniform;
  // Quincy: preference arcs per task (to machines, or to racks one time in
  // four), uniform in [min_preferences, max_preferences].
  uint32_t min_preferences = 2;
  uint32_t max_preferences = 7;
  // Multiplies every cost (Quincy's random costs, load spreading's
  // constants), so solvers see the same structure at another cost range.
  int64_t cost_scale = 1;
  // Extra waiting tasks in one additional job, submitted on top of the
  // `utilisation` load: the "contended" case of Firmament section 4.3.
  uint32_t new_job_tasks = 0;
  uint64_t seed = 1;
};

// Load-spreading costs, as flow::LoadSpreadingParams.
inline constexpr int64_t kLsPerTaskCost = 10;
inline constexpr int64_t kLsUnscheduledCost = 100'000;
inline constexpr int64_t kLsPreemptionCost = 200'000;

// What one incremental round changed (indices into the new snapshot).
struct RoundChanges {
  uint32_t arrivals = 0;           // new waiting tasks
  uint32_t completions = 0;        // running tasks removed
  uint32_t starts = 0;             // waiting tasks now running on a machine
  int64_t failed_machine = -1;     // machine index failed this round
  int64_t recovered_machine = -1;  // machine index back this round
  std::vector<uint32_t> changed_nodes;  // sorted, unique
  std::vector<uint32_t> changed_arcs;   // sorted, unique
};

struct IncrementalOptions {
  // Per round, a fraction uniform in [min_change, max_change] of the live
  // tasks changes: half complete (running tasks leave), half arrive (new
  // waiting tasks, mostly in new jobs); as many waiting tasks as arrive
  // start (the previous round's placements taking effect).
  double min_change = 0.005;
  double max_change = 0.02;
  // Chance per round that one machine fails (its running tasks wait
  // again, its slots vanish); it recovers three rounds later.
  double machine_failure_probability = 0.15;
  // Where a starting task runs. kFollowOptimum: on the machine an optimal
  // flow of the previous round's network sends it to (solved in NextRound
  // by a deterministic flowsched solver, so every algorithm of a benchmark
  // sees the same sequence), as in the scheduler, where a task starts
  // where the last round placed it. kRandomFreeSlot: a random waiting task
  // on a random machine with room, wherever the optimum had put it: every
  // start then moves a unit of the previous flow, a stress test of the
  // repair (displacement chains through full machines) that the product's
  // data path does not produce.
  enum class StartModel { kFollowOptimum, kRandomFreeSlot };
  StartModel starts = StartModel::kFollowOptimum;
};

// The cluster model and its exported network. Deterministic: the same
// shape, options and sequence of calls give identical problems.
class ClusterNetwork {
 public:
  explicit ClusterNetwork(const ClusterShape& shape,
                          const IncrementalOptions& options = {});

  const solver::McmfProblem& problem() const { return problem_; }
  uint32_t live_tasks() const { return live_tasks_; }
  uint32_t running_tasks() const {
    return static_cast<uint32_t>(running_.size());
  }
  // Arcs that are not dead slots.
  size_t live_arcs() const { return problem_.arcs.size() - free_arcs_.size(); }

  // Applies one round of changes per IncrementalOptions. `last_flow`, if
  // given (per arc of the current problem), is the optimum whose
  // placements the starts follow instead of the generator's own solve.
  RoundChanges NextRound(const std::vector<int64_t>* last_flow = nullptr);

 private:
  struct Task {
    uint32_t node = 0;
    uint32_t job = 0;
    int64_t machine = -1;  // running on, or -1 while waiting
    // Quincy: the waiting arcs, then (while running) the arc to `machine`.
    std::vector<uint32_t> arcs;
    uint32_t list_pos = 0;  // position in running_ or waiting_
    bool live = false;
  };
  struct Job {
    uint32_t node = 0;
    uint32_t sink_arc = 0;
    uint32_t tasks = 0;
    int64_t unscheduled_base = 0;  // Quincy: omega * seconds waited
    bool live = false;
  };
  struct Machine {
    uint32_t rack = 0;
    uint32_t node = 0;
    uint32_t sink_arc = 0;
    uint32_t rack_arc = 0;             // Quincy: R -> M
    std::vector<uint32_t> piece_arcs;  // load spreading: X -> M pieces
    uint32_t running = 0;
    bool failed = false;
  };

  int64_t Uniform(int64_t lo, int64_t hi);
  double UnitReal();  // in [0, 1)
  int64_t DrawJobSize();
  uint32_t AllocNode(int64_t supply);
  void FreeNode(uint32_t node);
  uint32_t AllocArc(const solver::McmfArc& arc);
  void SetArc(uint32_t index, const solver::McmfArc& arc);
  void FreeArc(uint32_t index);
  void TouchNode(uint32_t node);
  void TouchArc(uint32_t arc);

  uint32_t AddJob();
  void AddTask(uint32_t job, int64_t machine);
  void RemoveTask(uint32_t task);
  void BuildTaskArcs(Task& task);
  void FreeTaskArcs(Task& task);
  void StartTask(uint32_t task, uint32_t machine);
  void StopTask(uint32_t task);  // running -> waiting (machine failure)
  void UpdateMachineArcs(uint32_t machine);
  void UpdateRackArc(uint32_t rack);
  void FailMachine(uint32_t machine);
  void RecoverMachine(uint32_t machine);
  int64_t PickFreeMachine();
  bool HasRoom(uint32_t machine) const;
  // IncrementalOptions::kFollowOptimum: per task id, the machine an
  // optimal flow of the current network runs it on (-1: unscheduled, not a
  // waiting task, or no optimum). Flow through X and the racks is split
  // over machines in index order, like a path decomposition.
  std::vector<int64_t> OptimumPlacements(
      const std::vector<int64_t>* last_flow) const;
  void AddRunningArc(Task& task);
  void ListRemove(std::vector<uint32_t>& list, uint32_t task);
  void ListAdd(std::vector<uint32_t>& list, uint32_t task);

  ClusterShape shape_;
  IncrementalOptions options_;
  std::mt19937_64 rng_;
  solver::McmfProblem problem_;
  std::vector<uint32_t> free_nodes_;  // min-heap
  std::vector<uint32_t> free_arcs_;   // min-heap
  std::vector<Machine> machines_;
  std::vector<uint32_t> rack_arcs_;  // Quincy: X -> R
  std::vector<uint32_t> rack_first_machine_;
  std::vector<Job> jobs_;
  std::vector<Task> tasks_;
  std::vector<uint32_t> free_task_ids_;
  std::vector<uint32_t> running_;  // task ids
  std::vector<uint32_t> waiting_;  // task ids
  uint32_t live_tasks_ = 0;
  uint32_t rack_count_ = 0;
  std::vector<std::pair<uint32_t, int>> failed_;  // machine, rounds left
  // Change tracking for the current round.
  bool tracking_ = false;
  std::vector<uint32_t> changed_nodes_;
  std::vector<uint32_t> changed_arcs_;
};

// One-shot networks (the snapshot of a fresh ClusterNetwork).
solver::McmfProblem QuincyNetwork(ClusterShape shape);
solver::McmfProblem LoadSpreadingNetwork(ClusterShape shape);
// A busy load-spreading cluster (every task running, `utilisation` of the
// slots) plus one new job of `new_job_tasks` waiting tasks.
solver::McmfProblem ContendedLoadSpreadingNetwork(uint32_t machines,
                                                  double utilisation,
                                                  uint32_t new_job_tasks,
                                                  uint64_t seed);

std::string ShapeName(NetworkShape shape);
std::string JobSizesName(JobSizes sizes);

}  // namespace flowsched::bench
