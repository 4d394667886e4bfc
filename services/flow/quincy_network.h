#pragma once

// Quincy (Isard et al., SOSP 2009, section 4 and Appendix; Firmament OSDI
// 2016 figure 6b): data locality, wait time and preemption traded off in one
// min-cost flow, with fairness by capacities.
//
//   task --(upsilon = omega*nu)--> U_j --(cap F_j - E_j)--> S
//   task --(alpha)--> X --(cap slots of rack l)--> R_l --(slots of m)--> C_m
//   task --(rho_l)--> R_l            for each preferred rack l
//   task --(gamma_m)--> C_m          for each preferred computer m
//   running task --(d* - theta)--> C_m'   its current computer
//   C_m --(slots of m)--> S
//
// Supplies: every task 1, U_j gets F_j - N_j and the sink -sum_j F_j (the
// paper's minimum-flow transform, Appendix: it forces E_j <= scheduled <=
// F_j). There are no root tasks here (a job's tasks are all workers), so the
// sink drains sum_j F_j instead of sum_j (F_j + 1).
//
// Generalisation: Quincy runs one task per computer. Here a computer has
// task_slots slots: R_l -> C_m and C_m -> S carry the machine's slots and
// X -> R_l the rack's total, and the fair share counts slots (M = total
// slots). With one slot per machine this is exactly the paper's graph.
//
// The costs and bounds are terms, each in its own file: upsilon is
// terms/wait_time_term.h, alpha, rho_l, gamma_m and d* are
// terms/data_locality_term.h (where a task's input is, and the paper's
// approximations for a running task's computer), d* - theta is
// terms/running_time_term.h, and E_j, F_j are terms/fairness_term.h. Costs
// are integers in units of 1/1024 of the paper's (terms/quincy_units.h),
// each capped at omega_cap (the paper's Omega) and the running cost at
// -2 * omega_cap, so every cost stays within solver::kMaxArcCost.
//
// Cost of a round: Sync re-derives the changed tasks, each in time
// proportional to its locality entries (racks without input data all share
// one price, so they are never enumerated), and Refresh re-prices only the
// time-dependent arcs (omega*nu to U_j of waiting tasks, d* - theta to the
// current computer when the priced theta steps) from the d* remembered at
// the task's last Sync, so a round's cost follows what changed, not the
// 150,000 tasks and 12,500 machines of the cluster.
//
// Resources: X, R_l and C_m count slots only. A waiting task that asks for
// room (CPU, memory, network, named scalars, devices, required labels,
// different machines) takes the same arcs at the same costs, but to its
// request shape's aggregators, whose arcs carry each machine's room
// reserved for the shape (quincy_room_routes.h), so no flow over-commits a
// machine (re-reserved at each Sync, or at the Refresh before the next
// round with SyncContext::refresh_follows). Such a task keeps only its own
// computer (and U_j) while it runs: moving it would need room reserved for it.
// For a job with a waiting task that asks for room, E_j is a soft bound (U_j ->
// S takes E_j more units at UnmetBoundCost each), since the room to reach it
// may not exist; the solver still meets it wherever room allows. While any gang
// lives, every job's E_j is soft the same way: a round's gang passes may
// block any job's waiting tasks from every machine (core/round_solver.h),
// which a hard E_j would turn into an infeasible round.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "services/flow/quincy_room_routes.h"
#include "services/flow/scheduling_policy.h"
#include "services/flow/terms/data_locality_term.h"
#include "services/flow/terms/fairness_term.h"
#include "services/flow/terms/running_time_term.h"
#include "services/flow/terms/wait_time_term.h"

namespace flowsched::flow {

struct QuincyNetworkParams {
  // Cost weights of section 4.2 in paper units (terms/quincy_units.h).
  // Defaults are the values of the experiments (section 6: omega 0.5, psi
  // 1, xi 2).
  double omega = 0.5;  // per second unscheduled
  double psi = 1.0;    // per GB read across a rack switch
  double xi = 2.0;     // per GB read across the core switch (QFPX: 20)
  // Preference thresholds delta^c and delta^r (section 3.1: 0.1 is
  // effective for both) and the cap on preference arcs per kind.
  double delta_computer = 0.1;
  double delta_rack = 0.1;
  size_t max_preferences = 10;
  // Omega in cost units: 2^20 is about 34 minutes of waiting at omega =
  // 0.5, and a task that ran about 34 minutes (its running cost at the floor
  // -2 Omega) is never preempted. It bounds max|cost| for the solvers: cost
  // scaling needs (n + 1) max|cost| <= 2^58 and scaled prices within 2^60
  // (a task is a few arcs from the sink, so potentials spread over a few
  // max|cost|), far above 2^20.
  int64_t omega_cap = int64_t{1} << 20;
  // Cost units a running task's arc to its own computer costs less than
  // d* - theta. The paper's theta is 0 when a task starts, so a task that
  // just started could move to any computer of equal data cost at no
  // price, and a solver from scratch breaks such ties arbitrarily,
  // migrating tasks for no gain. One unit makes staying the strict optimum
  // among equals; a migration still happens whenever it saves anything.
  int64_t stay_bonus = 1;
  // Resolution of theta in the running cost (terms/running_time_term.h): a
  // running task's arc is re-priced when its priced theta steps, not every
  // round. theta is priced rounded down to a step of theta_step_us * 2^k,
  // the smallest such step with theta < step * 2^(theta_bits + 1), so a task
  // is re-priced about 2^theta_bits times per doubling of its runtime. A
  // pure function of theta: a network built from scratch at any time equals
  // the refreshed one.
  int64_t theta_step_us = 100'000;
  int theta_bits = 3;
};

class QuincyNetwork {
 public:
  // `fairness` sets the bounds (terms/fairness_term.h) and whether running
  // tasks may be preempted or moved: with `preemptive` they keep their
  // arcs to U_j, X and their preferences, else only their own computer.
  // `room_pricing` prices the arcs by which tasks that ask for room enter
  // machines (quincy_room_routes.h; empty: cost 0).
  explicit QuincyNetwork(QuincyNetworkParams params = {},
                         FairnessParams fairness = {},
                         RoomPricing room_pricing = {});
  // Not copyable: the topology index points into topology_.
  QuincyNetwork(const QuincyNetwork&) = delete;
  QuincyNetwork& operator=(const QuincyNetwork&) = delete;
  // SchedulingPolicy's Sync, Refresh and refresh_owed (the network is
  // always time dependent).
  // REQUIRES: the change sets of successive Syncs together name every
  // change to the state since the first (job counts are kept from them).
  absl::Status Sync(const cluster::ChangeSet& changes,
                    const cluster::ClusterState& state,
                    const SyncContext& context, NetworkBuilder& builder);
  [[nodiscard]] bool refresh_owed() const { return room_owed_ || !synced_; }
  absl::Status Refresh(const cluster::ClusterState& state,
                       const SyncContext& context, NetworkBuilder& builder);

  // The fairness bounds the network encodes, computed from `state` (section
  // 3.3 for A_j, 4.3 for the variants). Exposed for tests and explanations.
  [[nodiscard]] std::map<JobId, QuincyJobBounds> ComputeBounds(
      const cluster::ClusterState& state) const;
  // The same in job id order into `bounds` (its buffer reused).
  using QuincyBoundsByJob = flow::QuincyBoundsByJob;
  void ComputeBounds(const cluster::ClusterState& state,
                     QuincyBoundsByJob& bounds) const;

  // What each task below E_j costs for a job whose tasks ask for room, and
  // for every job while a gang lives.
  [[nodiscard]] int64_t UnmetBoundCost() const;

 private:
  struct Topology {
    std::map<std::string, std::vector<MachineId>> racks;
    std::map<MachineId, std::pair<std::string, uint32_t>> machines;
    bool operator==(const Topology&) const = default;
  };
  // What Refresh needs to re-price a task without re-deriving it: the
  // machine the task ran on at its last Sync (0 if waiting) and d* there.
  struct TimePricing {
    MachineId machine;
    int64_t running_data = 0;
    // Running: when the running cost next changes (kNever at the floor).
    int64_t due_us = 0;
  };
  static constexpr int64_t kNever = INT64_MAX;
  // Records `pricing` for a task and schedules its next re-pricing.
  void Remember(const cluster::Task& task, TimePricing pricing, int64_t now_us);
  [[nodiscard]] int64_t RunningDue(const cluster::Task& task, int64_t data,
                                   int64_t now_us) const;
  // True if the machines named in `changes` leave the topology as it is.
  [[nodiscard]] bool TopologyUnchanged(
      const cluster::ChangeSet& changes,
      const cluster::ClusterState& state) const;
  absl::Status SyncTopology(const cluster::ChangeSet& changes,
                            const cluster::ClusterState& state,
                            NetworkBuilder& builder, bool& changed);
  absl::Status SyncJobs(const cluster::ChangeSet& changes,
                        const cluster::ClusterState& state,
                        NetworkBuilder& builder);
  absl::Status SyncTask(const cluster::Task& task,
                        const cluster::ClusterState& state, int64_t now_us,
                        NetworkBuilder& builder);
  void RemoveTask(TaskId id, NetworkBuilder& builder);
  // Sets only the time-dependent arcs of a task synced before.
  absl::Status RepriceTask(const cluster::Task& task, NodeId node,
                           const TimePricing& pricing, int64_t now_us,
                           NetworkBuilder& builder);
  // Refresh of one task: re-derived in full if this policy never priced it
  // (a restored network) or its node or machine moved since, else
  // re-priced.
  absl::Status RefreshTask(const cluster::Task& task,
                           const cluster::ClusterState& state, int64_t now_us,
                           NetworkBuilder& builder);

  QuincyNetworkParams params_;
  bool preemptive_;
  Topology topology_;
  // The terms; data_ indexes topology_ (Index again whenever it changes).
  WaitTimeTerm wait_;
  RunningTimeTerm running_;
  DataLocalityTerm data_;
  FairnessTerm fairness_;
  // False until a Sync (or a Refresh of a fresh policy over a restored
  // network) has derived the topology and the job nodes.
  bool synced_ = false;
  // Every task SyncTask priced, by id; entries leave with their task.
  absl::flat_hash_map<TaskId, TimePricing> pricing_;
  // Refresh's work list, so that a round re-prices only what changed in
  // price: the waiting tasks (their wait cost grows continuously) and a
  // min-heap of (due_us, task) for running ones. Heap entries whose due_us
  // no longer matches pricing_ are stale and skipped. Ordered containers
  // keep the order of recorded changes deterministic.
  std::set<TaskId> waiting_;
  std::priority_queue<std::pair<int64_t, TaskId>,
                      std::vector<std::pair<int64_t, TaskId>>, std::greater<>>
      due_;
  int64_t sink_offset_ = 0;   // sum of the U_j supplies
  QuincyBoundsByJob bounds_;  // SyncJobs' buffer
  // N_j and the running count of every job of the state, job id ascending
  // (the other fields 0), brought up to date from each change set
  // (UpdateJobCounts): a round's bounds start from it instead of a walk
  // over every job of the state, which at 50,000 machines was most of a
  // steady round's sync.
  QuincyBoundsByJob job_counts_;
  bool job_counts_valid_ = false;
  // The jobs a change set names, and those of the tasks it names, from
  // `state`; a walk over every job the first time, after a change set that
  // names many, or if the count of jobs comes out different.
  void UpdateJobCounts(const cluster::ChangeSet& changes,
                       const cluster::ClusterState& state);
  // Waiting tasks that ask for room, and their shapes' aggregators.
  RoomRoutes room_;
  // A Sync with refresh_follows left room_.SyncArcs to Refresh.
  bool room_owed_ = false;
};

}  // namespace flowsched::flow
