#pragma once

// A scheduling profile: a policy composed of feasibility filters and
// weighted cost terms over one network shape, the request-shape classes:
//
//   waiting task --(0)--> EC_s --(cap = tasks of s reserved on m,
//                                 convex: sum of weighted terms)--> M
//   waiting task --(unscheduled_cost + priority_step * p
//                   + wait * seconds waited)--> U_job
//   running task --(0)--> its machine; --(preemption_cost)--> U_job
//   M --(slots)--> S
//
// Filters decide where an arc EC_s -> M exists and what it may carry, so
// any flow the solver returns is feasible by construction: the one fit
// rule (cluster::FitTask: every resource, named scalar and device, the
// acceptable models, required labels), the job's different-machines rule,
// the per-machine task limit, and with network_room_by_use a link's spare
// bandwidth measured against its reported use (RoomLimits: they only
// narrow the fit rule). Each machine's free room is reserved
// among the shapes (request_shapes.h) and an arc's capacity is what its
// shape reserved.
//
// Cost terms (terms/) price the k-th task of a shape on a machine; a
// weight is the term's cost in units at value 1, and a term of weight 0 is
// left out. The terms' contract (values in [-1, 1], non-decreasing in k)
// keeps the arcs convex. While waiting is dearer than any placement
// (CheckProfile, which the registry applies to `profile` specs; built-in
// profiles keep the ranges their stored specs were accepted with), a round
// places at least one task whenever one fits somewhere, and repeated
// rounds leave no fitting task waiting.
//
// Waiting tasks of the same shape share their class's reserved room; a
// higher priority (the task's or its job's, clamped to [0, max_priority])
// makes waiting dearer, so the solver gives the room to the higher
// priorities first. Running tasks never move for the classes: preempting
// one frees nothing for them in the same round (capacities come from the
// current allocation); with `preemptive`, the pool may displace them for
// higher-priority tasks that ask for a slot only (below).
//
// Locality: with a `locality` weight, tasks that ask alike but keep most
// of their input in different racks are different shapes (ShapeIndex's
// by_input_rack), and each machine offers its room to the shapes planned
// on its rack (rack_plan.h: the round's rack-level transportation problem
// decides which work a rack in demand keeps) before the rotation (after
// starving gangs), then to the shapes whose input is mostly there or that
// hold at least a tenth of it there (Quincy's preferred-rack threshold),
// for the work the plan could not place whole. Each list is
// largest first (first-fit decreasing: small shapes offered first leave
// pieces the large ones fit nowhere), and each machine of the rack starts
// it at its own offset (machines that all started at the front gave the
// first shapes every machine of the rack and the rest none). Whatever the
// weight, a shape without input, or with none of it in a machine's rack,
// gets that machine's room only after the rack's listed shapes.
//
// Gangs: a shape holding a gang member that has waited
// `gang_first_after_s` is offered every machine's room before the others,
// until its waiting tasks have room (StarvingFirst), so newer work cannot
// keep taking the room a gang needs whole; the round solver's hold
// (core/gang_requirements.h, the same default age) keeps the rest off it.
// Refresh, before each round, redoes the reservations when that set of
// shapes changed. The reservations walk every machine, so a Sync with
// refresh_follows leaves them to that Refresh.
//
// Tasks that ask for no room may instead wait in one pool reaching every
// machine's free slots (pool_slot_tasks, slot_pool.h):
//   waiting task --(0)--> X --(convex: tasks * (running + k - 1))--> M
// and with `preemptive` the pool also offers running tasks' slots, which a
// running task leaves for its job's U (its waiting cost + preemption_cost)
// or, if it asks for a slot only, through X (migration_cost):
//   X --(tasks * (running + k) per free slot; tasks * slots)--> M
// With `room_pool` too, the shapes that ask for CPU, memory or network only
// also reach every machine whose free room fits the largest such ask in
// each free slot through one more pool (room_pool.h), priced as X:
//   EC_s --(0)--> R --(convex: tasks * (running + k - 1), free slots)--> M
// and X's arcs close while no task X is for waits or runs.
//
// With `gate`, reservations give way to one gate per machine
// (machine_gates.h): every shape that fits reaches it at the price of one
// task, and it admits one new task a round:
//   EC_s --(one task's price, cap 1)--> G_m --(1)--> M
//
// Built-in profiles keep the names and costs of the policies they replace:
// `cpu-memory` is spread and preferred_labels (cpu_memory_policy.h),
// `load-spreading` tasks, the pool and a cap (load_spreading_policy.h),
// `priority` the same with priorities and preemption (priority_policy.h),
// `network-aware` network with its room by use (network_aware_policy.h),
// `gpu-fgd` fragmentation, packing, model affinity and first fit through
// gates (gpu_fragmentation_policy.h), and the Quincy variants Quincy's
// network (quincy_policy.h).
//
// With `quincy`, Sync and Refresh hand over to Quincy's network
// (quincy_network.h) instead: tasks reach computers through X, the racks
// and their preferred computers and racks, priced by Quincy's terms, with
// fairness bounds on each job's U.

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "services/flow/machine_gates.h"
#include "services/flow/quincy_network.h"
#include "services/flow/request_shapes.h"
#include "services/flow/room_pool.h"
#include "services/flow/scheduling_policy.h"
#include "services/flow/slot_pool.h"
#include "services/flow/terms/placement_term.h"

namespace flowsched::flow {

struct ProfileParams {
  // Cost terms: weights in cost units at a term's value 1 (terms/).
  int64_t spread = 1000;           // dominant utilisation after k tasks
  int64_t pack = 0;                // room left after one task (most-allocated)
  int64_t preferred_labels = 500;  // discount where preferred labels match
  int64_t model_affinity = 0;      // devices not of a preferred model
  int64_t locality = 0;            // outside the rack holding the input
  int64_t tasks = 0;               // each task the machine already has
  int64_t network = 0;             // each MiB/s the link carries after k tasks
  int64_t fragmentation = 0;       // GPU fragmentation the task adds (FGD)
  int64_t first_fit = 0;           // the machine's position in id order
  // The fragmentation term's score levels (0: the delta itself, over
  // FragmentationTerm::kMaxDeltaMilli) and the share of the tasks whose
  // shapes make its expected workload.
  int64_t fragmentation_levels = 100;
  double workload_coverage = 0.95;
  // Waiting: a task waits at unscheduled_cost + priority_step * priority
  // + wait * the whole seconds it has waited (Quincy's omega * nu), those
  // counted up to wait_cap_s. With wait, each round re-prices every
  // waiting task's arc (O(tasks) before each round). The two add up: a
  // higher priority comes first only while wait * wait_cap_s stays below
  // priority_step.
  int64_t unscheduled_cost = 100'000;
  int64_t priority_step = 0;
  int64_t max_priority = 1000;
  int64_t wait = 0;
  double wait_cap_s = 3600;
  int64_t preemption_cost = 200'000;
  // Filters beyond the fit rule: tasks a machine may run (0: its slots),
  // and a machine's free network measured against the larger of its
  // reported use and its tasks' requests (RoomLimits::network_by_use).
  int64_t max_tasks_per_machine = 0;
  bool network_room_by_use = false;
  // Machines a shape reserves room on each round: at least
  // min_shape_machines and shape_machines_per_task per waiting task,
  // visited least loaded first (most loaded first when pack outweighs
  // spread), the visit ending once every shape has its share; 0: every
  // machine where it fits (cpu-memory's rule), which at 12,500 machines
  // makes each round walk and price them all. Not with locality yet.
  int64_t shape_machines_per_task = 0;
  int64_t min_shape_machines = 16;
  // Tasks that ask for no room (AsksForRoom false) wait in one pool that
  // reaches every machine's free slots (slot_pool.h), instead of through a
  // class per shape: load-spreading's network. The pool prices a slot by
  // the tasks term alone (tasks = 0: it does not spread), so the other
  // terms (preferred labels among them) do not reach pooled tasks, nor
  // does a starving gang's first offer; the classes keep both. Not with
  // locality (pooled tasks would read anywhere).
  bool pool_slot_tasks = false;
  // Tasks whose shape asks for CPU, memory or network only may also reach
  // every machine whose free room holds the largest such ask in each free
  // slot through one more pool R (room_pool.h), priced as the slot pool:
  // a burst of many shapes then finds room in one round, spread by the
  // machine's count of new tasks across shapes. The reservations keep the
  // other machines' room, and the slot pool's arcs close while no task it
  // is for waits or runs (slot_pool.h's SlotPoolUsers). Needs
  // pool_slot_tasks and a cap (shape_machines_per_task); not preemptive;
  // tasks is the only term (R prices by it alone).
  bool room_pool = false;
  // Running tasks may be displaced by higher-priority waiting work
  // (Firmament's priority extension, Gog 2016 section 7.3): a running task
  // leaving costs its waiting cost plus preemption_cost, one that asks for
  // a slot only may move through the pool at migration_cost, and the pool
  // offers running tasks' slots (SetPreemptiblePoolArc). So a task is
  // displaced only for strictly higher priority. Needs the pool; the
  // classes still see only free room: work that asks for room does not
  // displace, so on a full cluster it waits for room to free even while
  // lower-priority slot-only work displaces others.
  bool preemptive = false;
  int64_t migration_cost = 20'000;
  // Seconds a gang member waits before its shape gets first offer of
  // every machine's room (0: never).
  double gang_first_after_s = 60;
  // Gated admission instead of reservations (machine_gates.h): one new
  // task per machine a round, through a gate every fitting shape reaches
  // at the price of one task, so the price is exact for the machine as it
  // is (gpu-fgd's network). Not with the pool, a cap or locality. Every
  // shape then reaches every machine where it fits, so there is nothing
  // to offer a starving gang first: gang_first_after_s does not apply
  // (the round solver's gang hold still does).
  bool gate = false;
  // Quincy's network instead of the classes (quincy_network.h): each task
  // reaches computers through the cluster aggregator X and the racks, and
  // directly its preferred racks and computers, priced by Quincy's data,
  // wait and running-time terms (quincy_network's costs), with each job's
  // running tasks bounded by its fair share (terms/fairness_term.h: fair
  // shares or not, admission_limit jobs admitted, 0: all). `preemptive`
  // then means that running tasks keep their arcs to U_j, X and their
  // preferences (QFP, QP), so the solver may preempt or move them. Tasks
  // that ask for room take the same arcs to their request shape's
  // aggregators, which carry each machine's room reserved for the shape
  // (quincy_room_routes.h); the class terms price the arcs by which those
  // enter machines, as they price the classes'. Locality (Quincy has its
  // own), the pool, gates, caps, wait, priorities, the task limit and the
  // other tunables only the classes read do not apply (CheckProfile
  // refuses them).
  bool quincy = false;
  QuincyNetworkParams quincy_network;
  bool fair = true;
  uint32_t admission_limit = 0;
};

// InvalidArgument if shape_machines_per_task or pool_slot_tasks is set
// with locality or a gate, or a gate with locality (not supported),
// preemptive without pool_slot_tasks, with a free preemption or migration,
// or with wait * wait_cap_s above preemption_cost (waiting alone would
// then displace equal priorities), a weight is negative (falling arc
// pieces) or waiting does not cost more than the dearest placement
// (unscheduled_cost > spread + pack + model_affinity + locality +
// fragmentation + first_fit + tasks * (the decoder's default slot limit -
// 1) + network * the network term's bound: otherwise a task that fits
// could wait for ever). With quincy, after the weights' signs, instead:
// if it is set with locality, wait, priority_step, max_tasks_per_machine,
// shape_machines_per_task, network_room_by_use, pool_slot_tasks or a
// gate, with another tunable only the classes read away from its default,
// or with a dearest placement not below omega_cap, where Quincy's waiting
// stops growing. Without quincy, also if Quincy's own tunables are away
// from their defaults (they would be ignored).
absl::Status CheckProfile(const ProfileParams& params);

class ProfilePolicy : public SchedulingPolicy {
 public:
  // Where a task's arc to its job's U is listed among its arcs
  // (TaskRoutes::job_first): the solver's tie-breaks follow it, and each
  // built-in profile keeps the order of the class it replaced.
  enum class JobArc { kFirst, kLast };
  explicit ProfilePolicy(ProfileParams params = {},
                         std::string name = "profile",
                         JobArc job_arc = JobArc::kFirst);
  // Not copyable or movable: Quincy's network prices through this policy.
  ProfilePolicy(const ProfilePolicy&) = delete;
  ProfilePolicy& operator=(const ProfilePolicy&) = delete;
  [[nodiscard]] std::string_view name() const override { return name_; }
  using SchedulingPolicy::Sync;
  absl::Status Sync(const cluster::ChangeSet& changes,
                    const cluster::ClusterState& state,
                    const SyncContext& context,
                    NetworkBuilder& builder) override;
  [[nodiscard]] bool time_dependent() const override {
    return params_.quincy ||
           (!params_.gate && params_.gang_first_after_s > 0) ||
           params_.wait != 0;
  }
  [[nodiscard]] bool refresh_owed() const override {
    if (quincy_ != nullptr) return quincy_->refresh_owed();
    return reservations_owed_ || !waiting_.tracking();
  }
  absl::Status Refresh(const cluster::ClusterState& state,
                       const SyncContext& context,
                       NetworkBuilder& builder) override;

  // The price of the k-th task of `shape` on `machine` (k >= 1): the sum
  // of the weighted terms, each rounded, within +-solver::kMaxArcCost. The
  // terms must have been prepared for the state `machine` is in (Reserve does).
  [[nodiscard]] int64_t PlacementCost(const cluster::Machine& machine,
                                      const RequestShape& shape,
                                      int64_t k) const;
  // PlacementCost term by term, after preparing the terms for `state`:
  // each weighted term's name and rounded cost (before the clamp), in the
  // order the profile adds them (what `flowsched explain` prints).
  struct TermCost {
    std::string_view name;
    int64_t cost = 0;
  };
  [[nodiscard]] std::vector<TermCost> ExplainCost(
      const cluster::ClusterState& state, const cluster::Machine& machine,
      const RequestShape& shape, int64_t k);

  // Quincy's network, if the profile has it (null otherwise).
  [[nodiscard]] const QuincyNetwork* quincy_network() const {
    return quincy_.get();
  }

  // The filters reservations apply beyond the fit rule.
  [[nodiscard]] RoomLimits Limits() const {
    return {.max_tasks = params_.max_tasks_per_machine,
            .network_by_use = params_.network_room_by_use};
  }

  // A waiting task's cost at `now_us`: unscheduled_cost, plus
  // priority_step per level of its priority (the larger of the task's and
  // its job's, clamped to [0, max_priority]), plus wait per whole second it
  // has waited in all (Task::WaitMicros) up to wait_cap_s; at most
  // solver::kMaxArcCost.
  [[nodiscard]] int64_t WaitingCost(const cluster::Task& task,
                                    const cluster::ClusterState& state,
                                    int64_t now_us) const;

 private:
  struct WeightedTerm {
    std::string_view name;  // the profile parameter that weighs it
    int64_t weight;
    std::unique_ptr<PlacementTerm> term;
    // The term's value times its weight, rounded.
    [[nodiscard]] int64_t Cost(const cluster::Machine& machine,
                               const RequestShape& shape, int64_t k) const {
      return std::llround(term->Value(machine, shape, k) *
                          static_cast<double>(weight));
    }
  };
  // The arc from `shape`'s class to `machine` carrying the `n` tasks it
  // reserved there, priced by the terms.
  [[nodiscard]] DesiredArc ShapeArc(const cluster::Machine& machine,
                                    NodeId machine_node,
                                    const RequestShape& shape, int64_t n) const;
  // How SyncShapeClasses routes tasks: waiting costs, the pool, and the
  // running tasks' arcs when preemptive.
  [[nodiscard]] TaskRoutes Routes(const cluster::ClusterState& state,
                                  NodeId pool, int64_t now_us) const;
  // Whether `changes` adds or removes a machine or moves one to another
  // rack (locality profiles keep machine_racks_ for this).
  bool RacksChanged(const cluster::ChangeSet& changes,
                    const cluster::ClusterState& state);
  // Gated: prepares the terms and gives the classes their gate arcs.
  absl::Status SyncGates(const cluster::ChangeSet& changes,
                         const cluster::ClusterState& state,
                         const ShapeClasses& classes, NetworkBuilder& builder);
  // Reserves the machines' room among `shapes` (starving ones first) and
  // sets the class arcs.
  absl::Status Reserve(const cluster::ClusterState& state,
                       const std::vector<RequestShape>& shapes,
                       const std::map<std::string, NodeId>& nodes,
                       int64_t now_us, NetworkBuilder& builder);
  using ClassArcs = std::map<std::string, std::vector<DesiredArc>>;
  // shape_machines_per_task > 0: each shape's share of machines, the
  // least loaded first (the fullest when packing).
  // With room_pool, the machines R holds offer their room first to the
  // starving shapes and those R does not take; those where one reserved
  // are named in `closed` (R's arc to them stays shut this round, and the
  // room left goes to R's shapes by reservation).
  void ReserveCapped(const cluster::ClusterState& state,
                     const std::vector<RequestShape>& shapes,
                     StarvingFirst& starving, NetworkBuilder& builder,
                     ClassArcs& class_arcs,
                     absl::flat_hash_set<MachineId>& closed) const;
  // Uncapped: every machine's room, with locality to the shapes planned
  // on its rack (rack_plan.h) and listed there first.
  void ReserveEveryMachine(const cluster::ClusterState& state,
                           const std::vector<RequestShape>& shapes,
                           StarvingFirst& starving, NetworkBuilder& builder,
                           ClassArcs& class_arcs) const;

  ProfileParams params_;
  std::string name_;
  // With room_pool, the pool R (reservations skip the machines it holds).
  std::optional<RoomPool> room_pool_;
  // With room_pool, the tasks X is for: its arcs close while none waits or
  // runs (slot_pool.h).
  SlotPoolUsers slot_users_;
  JobArc job_arc_;
  std::vector<WeightedTerm> terms_;  // weight != 0 only
  bool depends_on_k_ = false;        // some term may (DependsOnK)
  // The waiting tasks by request shape (a fresh policy indexes all once).
  ShapeIndex waiting_;
  // Keys of the shapes the last reservation offered first.
  std::vector<std::string> starving_;
  // A Sync with refresh_follows left the reservations to Refresh.
  bool reservations_owed_ = false;
  // The machines' racks as the last Sync saw them (locality profiles).
  absl::flat_hash_map<MachineId, std::string> machine_racks_;
  // Gated profiles: the gates and their kept prices, and whether a
  // Prepare outside a sync (ExplainCost) moved a term's inputs since.
  MachineGates gates_;
  bool terms_moved_ = false;
  // With `quincy`, the network Sync and Refresh hand over to.
  std::unique_ptr<QuincyNetwork> quincy_;
};

}  // namespace flowsched::flow
