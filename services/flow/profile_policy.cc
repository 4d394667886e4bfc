#include "services/flow/profile_policy.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/cluster/resource_vector.h"
#include "services/cluster/validation_limits.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_walk.h"
#include "services/flow/rack_plan.h"
#include "services/flow/slot_pool.h"
#include "services/flow/terms/fragmentation_term.h"
#include "services/flow/terms/locality_term.h"
#include "services/flow/terms/machine_order_term.h"
#include "services/flow/terms/model_affinity_term.h"
#include "services/flow/terms/network_load_term.h"
#include "services/flow/terms/pack_term.h"
#include "services/flow/terms/preferred_labels_term.h"
#include "services/flow/terms/spread_term.h"
#include "services/flow/terms/task_count_term.h"
#include "services/solver/mcmf_problem.h"

namespace flowsched::flow {
namespace {

// A rack holding at least this share of a shape's input, though not the
// most, also offers the shape its room before the rotation (after its own
// shapes): Quincy's preferred-rack threshold (delta_rack, SOSP 2009).
constexpr double kSecondRackShare = 0.1;

// Each cost term's weight by its parameter name.
std::vector<std::pair<const char*, int64_t>> TermWeights(
    const ProfileParams& params) {
  return {{"spread", params.spread},
          {"pack", params.pack},
          {"preferred_labels", params.preferred_labels},
          {"model_affinity", params.model_affinity},
          {"locality", params.locality},
          {"tasks", params.tasks},
          {"network", params.network},
          {"fragmentation", params.fragmentation},
          {"first_fit", params.first_fit}};
}

// The count terms at their bounds: tasks up to the most slots a machine
// may announce, network up to its term's bound.
int64_t MostTasksBefore() {
  return static_cast<int64_t>(cluster::ValidationLimits{}.max_task_slots) - 1;
}

// The dearest price the terms give a placement. Weights are at most 1e6
// (the registry's range), so the sum stays far from overflow.
int64_t DearestPlacement(const ProfileParams& params) {
  return params.spread + params.pack + params.model_affinity + params.locality +
         params.fragmentation + params.first_fit +
         params.tasks * MostTasksBefore() +
         params.network * NetworkLoadTerm::kMaxMiBps;
}

// DearestPlacement's sum, as an error message names it.
std::string DearestPlacementFormula(const ProfileParams& params) {
  return absl::StrCat(
      "spread + pack + model_affinity + locality + fragmentation + first_fit",
      params.tasks > 0 ? absl::StrCat(" + tasks * ", MostTasksBefore()) : "",
      params.network > 0
          ? absl::StrCat(" + network * ", NetworkLoadTerm::kMaxMiBps)
          : "");
}

// Quincy's network prices data and waiting by its own terms and bounds jobs
// by fairness; the class terms price the arcs by which tasks that ask for
// room enter machines. What only the classes, the pool or the gates have,
// and the class terms Quincy's replace, are refused.
absl::Status CheckQuincyProfile(const ProfileParams& params) {
  for (const auto& [name, value] :
       {std::pair<const char*, double>{"locality", params.locality},
        {"wait", params.wait},
        {"priority_step", params.priority_step},
        {"max_tasks_per_machine", params.max_tasks_per_machine},
        {"shape_machines_per_task", params.shape_machines_per_task},
        {"network_room_by_use", params.network_room_by_use ? 1.0 : 0.0},
        {"pool_slot_tasks", params.pool_slot_tasks ? 1.0 : 0.0},
        {"room_pool", params.room_pool ? 1.0 : 0.0},
        {"gate", params.gate ? 1.0 : 0.0}}) {
    if (value != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "quincy=1 has its own locality, waiting and fairness (psi, xi, "
          "omega, fair, admission_limit) and no classes, pool or gates; "
          "set ",
          name, " to 0 (got ", value, ")"));
    }
  }
  // What the classes, the pool or the gates read and Quincy's network does
  // not, at other than its default, would be ignored: refused.
  const ProfileParams defaults;
  for (const auto& [name, ignored] :
       {std::pair<const char*, bool>{
            "unscheduled_cost",
            params.unscheduled_cost != defaults.unscheduled_cost},
        {"preemption_cost", params.preemption_cost != defaults.preemption_cost},
        {"migration_cost", params.migration_cost != defaults.migration_cost},
        {"max_priority", params.max_priority != defaults.max_priority},
        {"wait_cap_s", params.wait_cap_s != defaults.wait_cap_s},
        {"min_shape_machines",
         params.min_shape_machines != defaults.min_shape_machines},
        {"gang_first_after_s",
         params.gang_first_after_s != defaults.gang_first_after_s}}) {
    if (ignored) {
      return absl::InvalidArgumentError(
          absl::StrCat(name,
                       " does not apply with quincy=1 (Quincy's network has no "
                       "classes, pool or gates): leave it at its default"));
    }
  }
  // Waiting stops growing at omega_cap, where data costs stop too: the
  // class price stays below it, so that it alone never outweighs what
  // waiting can reach (and UnmetBoundCost stays the last resort). As in
  // Quincy, a task whose data cost is at the cap then relies on its
  // fairness bound to run.
  const int64_t dearest = DearestPlacement(params);
  if (dearest >= params.quincy_network.omega_cap) {
    return absl::InvalidArgumentError(absl::StrCat(
        "with quincy=1 the dearest placement, ",
        DearestPlacementFormula(params), " = ", dearest,
        ", must be below omega_cap (", params.quincy_network.omega_cap,
        "), where waiting stops growing"));
  }
  return absl::OkStatus();
}

// Without quincy, Quincy's own tunables at other than their defaults would
// be ignored: refused.
absl::Status CheckNoQuincyTunables(const ProfileParams& params) {
  const ProfileParams defaults;
  const QuincyNetworkParams& q = params.quincy_network;
  const QuincyNetworkParams& d = defaults.quincy_network;
  for (const auto& [name, ignored] :
       {std::pair<const char*, bool>{"fair", params.fair != defaults.fair},
        {"admission_limit", params.admission_limit != defaults.admission_limit},
        {"omega", q.omega != d.omega},
        {"psi", q.psi != d.psi},
        {"xi", q.xi != d.xi},
        {"delta_computer", q.delta_computer != d.delta_computer},
        {"delta_rack", q.delta_rack != d.delta_rack},
        {"max_preferences", q.max_preferences != d.max_preferences},
        {"omega_cap", q.omega_cap != d.omega_cap},
        {"stay_bonus", q.stay_bonus != d.stay_bonus},
        {"theta_step_us", q.theta_step_us != d.theta_step_us},
        {"theta_bits", q.theta_bits != d.theta_bits}}) {
    if (ignored) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " applies only with quincy=1"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckProfile(const ProfileParams& params) {
  for (const auto& [name, weight] : TermWeights(params)) {
    if (weight < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " must not be negative, got ", weight));
    }
  }
  if (params.quincy) return CheckQuincyProfile(params);
  FLOWSCHED_RETURN_IF_ERROR(CheckNoQuincyTunables(params));
  if (params.shape_machines_per_task > 0 && params.locality > 0) {
    // A capped walk that visits the planned racks first is not yet
    // proportional to the work (docs/2026-11-30-locality-rack-plan.md).
    return absl::InvalidArgumentError(
        "shape_machines_per_task cannot be combined with locality yet");
  }
  if (params.gate && (params.shape_machines_per_task > 0 ||
                      params.pool_slot_tasks || params.locality > 0)) {
    // A gate admits one task of any shape that fits; capped reservations,
    // the pool's slot pieces and the locality walk are reservations.
    return absl::InvalidArgumentError(
        "gate cannot be combined with shape_machines_per_task, "
        "pool_slot_tasks or locality");
  }
  if (params.preemptive && !params.pool_slot_tasks) {
    return absl::InvalidArgumentError(
        "preemptive needs pool_slot_tasks: the pool offers running tasks' "
        "slots");
  }
  if (params.preemptive &&
      (params.preemption_cost <= 0 || params.migration_cost <= 0)) {
    return absl::InvalidArgumentError(
        "preemptive needs preemption_cost > 0 and migration_cost > 0, or the "
        "solver may preempt or move a task for nothing");
  }
  if (params.preemptive &&
      static_cast<double>(params.wait) * params.wait_cap_s >
          static_cast<double>(params.preemption_cost)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "preemptive needs wait * wait_cap_s (",
        static_cast<double>(params.wait) * params.wait_cap_s,
        ") at most preemption_cost (", params.preemption_cost,
        "), or waiting alone would displace tasks of equal priority"));
  }
  if (params.room_pool) {
    if (!params.pool_slot_tasks || params.shape_machines_per_task <= 0 ||
        params.preemptive) {
      return absl::InvalidArgumentError(
          "room_pool needs pool_slot_tasks=1 and shape_machines_per_task > 0, "
          "and not preemptive: the room pool serves the capped walk's free "
          "room");
    }
    for (const auto& [name, weight] : TermWeights(params)) {
      if (weight != 0 && std::string_view(name) != "tasks" &&
          std::string_view(name) != "locality") {
        return absl::InvalidArgumentError(
            absl::StrCat("room_pool prices by the tasks term alone; set ", name,
                         " to 0 (got ", weight, ")"));
      }
    }
  }
  if (params.pool_slot_tasks && params.locality > 0) {
    return absl::InvalidArgumentError(
        "pool_slot_tasks cannot be combined with locality: pooled tasks "
        "would read their input anywhere");
  }
  const int64_t dearest = DearestPlacement(params);
  if (params.unscheduled_cost <= dearest) {
    return absl::InvalidArgumentError(
        absl::StrCat("unscheduled_cost (", params.unscheduled_cost,
                     ") must exceed the dearest placement, ",
                     DearestPlacementFormula(params), " = ", dearest,
                     ", or a task that fits could wait for ever"));
  }
  return absl::OkStatus();
}

ProfilePolicy::ProfilePolicy(ProfileParams params, std::string name,
                             JobArc job_arc)
    : params_(params),
      name_(std::move(name)),
      job_arc_(job_arc),
      waiting_(/*by_input_rack=*/params.locality > 0) {
  if (params_.room_pool) room_pool_.emplace(Limits());
  const auto add = [this](std::string_view term_name, int64_t weight,
                          std::unique_ptr<PlacementTerm> term) {
    if (weight == 0) return;
    depends_on_k_ = depends_on_k_ || term->depends_on_k();
    terms_.push_back({term_name, weight, std::move(term)});
  };
  add("spread", params_.spread, std::make_unique<SpreadTerm>());
  add("pack", params_.pack, std::make_unique<PackTerm>());
  add("preferred_labels", params_.preferred_labels,
      std::make_unique<PreferredLabelsTerm>());
  add("model_affinity", params_.model_affinity,
      std::make_unique<ModelAffinityTerm>());
  add("locality", params_.locality, std::make_unique<LocalityTerm>());
  add("tasks", params_.tasks, std::make_unique<TaskCountTerm>());
  add("network", params_.network, std::make_unique<NetworkLoadTerm>());
  add("fragmentation", params_.fragmentation,
      std::make_unique<FragmentationTerm>(params_.fragmentation_levels,
                                          params_.workload_coverage));
  add("first_fit", params_.first_fit, std::make_unique<MachineOrderTerm>());
  if (params_.quincy) {
    // The terms price the arcs by which tasks asking for room enter
    // machines, as they price the classes' (this outlives quincy_).
    RoomPricing pricing;
    if (!terms_.empty()) {
      pricing.prepare = [this](const cluster::ClusterState& state) {
        for (WeightedTerm& weighted : terms_) weighted.term->Prepare(state);
      };
      pricing.arc = [this](const cluster::Machine& machine, NodeId node,
                           const RequestShape& shape, int64_t n) {
        return ShapeArc(machine, node, shape, n);
      };
    }
    quincy_ = std::make_unique<QuincyNetwork>(
        params_.quincy_network,
        FairnessParams{.fair = params_.fair,
                       .preemptive = params_.preemptive,
                       .admission_limit = params_.admission_limit},
        std::move(pricing));
  }
}

int64_t ProfilePolicy::PlacementCost(const cluster::Machine& machine,
                                     const RequestShape& shape,
                                     int64_t k) const {
  int64_t cost = 0;
  for (const WeightedTerm& weighted : terms_) {
    cost += weighted.Cost(machine, shape, k);
  }
  // Within the solver's bound, which a count term on a deployment with a
  // raised slot limit could pass; clamping keeps the pieces convex.
  return std::clamp(cost, -solver::kMaxArcCost, solver::kMaxArcCost);
}

std::vector<ProfilePolicy::TermCost> ProfilePolicy::ExplainCost(
    const cluster::ClusterState& state, const cluster::Machine& machine,
    const RequestShape& shape, int64_t k) {
  std::vector<TermCost> costs;
  for (WeightedTerm& weighted : terms_) {
    terms_moved_ = weighted.term->Prepare(state) || terms_moved_;
    costs.push_back({weighted.name, weighted.Cost(machine, shape, k)});
  }
  return costs;
}

DesiredArc ProfilePolicy::ShapeArc(const cluster::Machine& machine,
                                   NodeId machine_node,
                                   const RequestShape& shape, int64_t n) const {
  // One piece unless some term's price moves with k for this shape.
  bool by_k = false;
  if (depends_on_k_) {
    for (const WeightedTerm& weighted : terms_) {
      by_k = by_k || weighted.term->DependsOnK(shape);
    }
  }
  DesiredArc arc{
      machine_node, by_k ? 1 : n, PlacementCost(machine, shape, 1), {}};
  if (by_k) {
    // Convex pieces: the k-th task costs the price after k tasks; beyond
    // kMaxArcSegments the last piece takes the rest.
    const int64_t pieces =
        std::min<int64_t>(n, static_cast<int64_t>(kMaxArcSegments) + 1);
    for (int64_t k = 2; k <= pieces; ++k) {
      arc.extra_segments.push_back(
          {k == pieces ? n - k + 1 : 1, PlacementCost(machine, shape, k)});
    }
  }
  return arc;
}

int64_t ProfilePolicy::WaitingCost(const cluster::Task& task,
                                   const cluster::ClusterState& state,
                                   int64_t now_us) const {
  int64_t cost = params_.unscheduled_cost;
  if (params_.priority_step != 0) {
    int64_t priority = task.spec.priority;
    if (const cluster::Job* job = state.FindJob(task.job); job != nullptr) {
      priority = std::max<int64_t>(priority, job->priority);
    }
    cost += params_.priority_step *
            std::clamp<int64_t>(priority, 0, params_.max_priority);
  }
  if (params_.wait != 0) {
    // Whole seconds, so a task's arc changes at most once a second.
    const int64_t waited_s =
        std::min<int64_t>(task.WaitMicros(now_us) / 1'000'000,
                          static_cast<int64_t>(params_.wait_cap_s));
    cost += params_.wait * waited_s;
  }
  return std::min(cost, solver::kMaxArcCost);
}

TaskRoutes ProfilePolicy::Routes(const cluster::ClusterState& state,
                                 NodeId pool, int64_t now_us) const {
  TaskRoutes routes{.waiting_cost =
                        [this, &state, now_us](const cluster::Task& task) {
                          return WaitingCost(task, state, now_us);
                        },
                    .running = nullptr,
                    .preemption_cost = params_.preemption_cost,
                    .in_classes = nullptr,
                    .pool = pool,
                    .job_first = job_arc_ == JobArc::kFirst};
  if (params_.pool_slot_tasks) {
    routes.in_classes = [&state](const cluster::Task& task) {
      return AsksForRoom(task, state);
    };
  }
  if (params_.preemptive) {
    routes.running = [this, &state, pool, now_us](const cluster::Task& task,
                                                  const TaskEnds& ends) {
      std::vector<DesiredArc> arcs = {
          {ends.machine, 1, 0, {}},
          {ends.job,
           1,
           std::min(WaitingCost(task, state, now_us) + params_.preemption_cost,
                    solver::kMaxArcCost),
           {}}};
      if (!AsksForRoom(task, state)) {
        arcs.push_back({pool, 1, params_.migration_cost, {}});
      }
      return arcs;
    };
  }
  return routes;
}

bool ProfilePolicy::RacksChanged(const cluster::ChangeSet& changes,
                                 const cluster::ClusterState& state) {
  bool changed = false;
  if (!waiting_.tracking()) {
    // The first Sync indexes every waiting task anyway.
    for (const auto& [id, machine] : state.machines()) {
      machine_racks_[id] = machine.rack;
    }
    return false;
  }
  for (MachineId id : changes.machines) {
    const cluster::Machine* machine = state.FindMachine(id);
    auto known = machine_racks_.find(id);
    if (machine == nullptr) {
      if (known != machine_racks_.end()) {
        machine_racks_.erase(known);
        changed = true;
      }
    } else if (known == machine_racks_.end()) {
      machine_racks_.emplace(id, machine->rack);
      changed = true;
    } else if (known->second != machine->rack) {
      known->second = machine->rack;
      changed = true;
    }
  }
  return changed;
}

absl::Status ProfilePolicy::Sync(const cluster::ChangeSet& changes,
                                 const cluster::ClusterState& state,
                                 const SyncContext& context,
                                 NetworkBuilder& builder) {
  if (quincy_ != nullptr) {
    return quincy_->Sync(changes, state, context, builder);
  }
  // Machines: slots to the sink (running tasks arrive directly), and from
  // the pool when there is one.
  bool slot_pool_flipped = false;
  if (room_pool_) {
    const bool all = !waiting_.tracking();
    room_pool_->NoteChanged(changes);
    room_pool_->TrackRunning(changes, state, all);
    slot_pool_flipped = slot_users_.Track(changes, state, all);
  }
  NodeId pool = kNoNode;
  if (params_.pool_slot_tasks) {
    const NodeId sink = builder.EnsureSink();
    pool = builder.EnsureClusterAggregator();
    FLOWSCHED_RETURN_IF_ERROR(SyncJobsToSink(changes, state, builder));
    // Beside R, X is open only while a task it is for waits or runs.
    const bool pool_open = !room_pool_ || slot_users_.any();
    const auto set_pool_arc = [&](const cluster::Machine& machine,
                                  NodeId node) {
      return params_.preemptive
                 ? SetPreemptiblePoolArc(machine, pool, node, params_.tasks,
                                         params_.max_tasks_per_machine,
                                         builder.network())
                 : SetSlotPoolArc(machine, pool, node, params_.tasks,
                                  params_.max_tasks_per_machine,
                                  builder.network(), pool_open);
    };
    const auto sync_machine = [&](const cluster::Machine& machine,
                                  NodeId node) -> absl::Status {
      FLOWSCHED_RETURN_IF_ERROR(set_pool_arc(machine, node));
      // The pool and the classes each keep the task limit; the arc to the
      // sink keeps it for both together (never below the tasks running).
      int64_t slots = static_cast<int64_t>(machine.task_slots);
      if (params_.max_tasks_per_machine > 0) {
        slots = std::max(static_cast<int64_t>(machine.running.size()),
                         std::min(slots, params_.max_tasks_per_machine));
      }
      return builder.SetOutArcs(node, {{sink, slots, 0}});
    };
    FLOWSCHED_RETURN_IF_ERROR(
        SyncChangedMachines(changes, state, builder, sync_machine));
    if (slot_pool_flipped) {
      for (const auto& [id, machine] : state.machines()) {
        if (changes.machines.contains(id)) continue;  // set above
        FLOWSCHED_RETURN_IF_ERROR(
            set_pool_arc(machine, builder.EnsureMachineNode(id)));
      }
    }
  } else {
    FLOWSCHED_RETURN_IF_ERROR(
        SyncMachinesAndJobsToSink(changes, state, builder));
  }

  // Where a task's input is depends on the machines there are: when they
  // come, go or change racks, every waiting task with input is indexed
  // again (its shape may move).
  const cluster::ChangeSet* synced = &changes;
  cluster::ChangeSet widened;
  if (params_.preemptive && !waiting_.tracking()) {
    // A running task's arcs depend on what it asks for here (migration
    // only through the pool): a fresh policy over a restored network (an
    // older build's) derives every task's again, once.
    widened = changes;
    for (const auto& [id, task] : state.tasks()) widened.tasks.insert(id);
    synced = &widened;
  } else if (params_.locality > 0 && RacksChanged(changes, state)) {
    widened = changes;
    for (const auto& [id, task] : state.tasks()) {
      if (!task.running() && !task.spec.input.empty()) widened.tasks.insert(id);
    }
    synced = &widened;
  }

  // Shapes of the waiting tasks, in key order (deterministic); built only
  // when read now (by the gates or the reservations).
  FLOWSCHED_ASSIGN_OR_RETURN(
      const ShapeClasses classes,
      SyncShapeClasses(
          waiting_, *synced, state, Routes(state, pool, context.now_us),
          builder,
          /*with_shapes=*/params_.gate || !context.refresh_follows));
  if (params_.gate) {
    // Gates price the changed machines, so they cannot wait for Refresh.
    FLOWSCHED_RETURN_IF_ERROR(SyncGates(changes, state, classes, builder));
    return DrainTasksAtSink(builder);
  }
  // The reservations walk the machines whatever changed: left to the
  // Refresh before the next solve when one follows.
  if (context.refresh_follows) {
    reservations_owed_ = true;
  } else {
    FLOWSCHED_RETURN_IF_ERROR(
        Reserve(state, classes.shapes, classes.nodes, context.now_us, builder));
    reservations_owed_ = false;
  }
  return DrainTasksAtSink(builder);
}

absl::Status ProfilePolicy::Refresh(const cluster::ClusterState& state,
                                    const SyncContext& context,
                                    NetworkBuilder& builder) {
  if (quincy_ != nullptr) return quincy_->Refresh(state, context, builder);
  if (!waiting_.tracking()) {
    // A fresh policy over a restored network: what its first Sync derives,
    // and with wait the pooled tasks' prices too (that Sync re-derives the
    // indexed tasks only).
    FLOWSCHED_RETURN_IF_ERROR(Sync(cluster::ChangeSet{}, state,
                                   SyncContext{context.now_us}, builder));
    if (params_.wait == 0) return absl::OkStatus();
  }
  if (params_.wait != 0) {
    // Waiting grows dearer with time: each waiting task's arc to its job's
    // U at the new price (only real changes are recorded).
    FlowNetwork& network = builder.network();
    for (const auto& [id, task] : state.tasks()) {
      if (task.running()) continue;
      const NodeId node = builder.FindTaskNode(id);
      const NodeId job = builder.FindJobNode(task.job);
      const std::optional<ArcView> arc = node == kNoNode || job == kNoNode
                                             ? std::nullopt
                                             : network.FindArc(node, job);
      if (!arc.has_value()) {
        return absl::InternalError(absl::StrCat("waiting task ", id.value(),
                                                " has no arc to its job's U"));
      }
      const int64_t cost = WaitingCost(task, state, context.now_us);
      if (arc->cost != cost) {
        FLOWSCHED_RETURN_IF_ERROR(network.SetArc(node, job, 1, cost));
      }
    }
  }
  if (params_.gate) return absl::OkStatus();  // no reservations
  const std::optional<std::vector<RequestShape>> shapes =
      waiting_.ShapesToReserve(state, context.now_us,
                               params_.gang_first_after_s, starving_,
                               reservations_owed_);
  if (!shapes) return absl::OkStatus();
  FLOWSCHED_RETURN_IF_ERROR(Reserve(state, *shapes,
                                    EnsureShapeNodes(*shapes, builder),
                                    context.now_us, builder));
  reservations_owed_ = false;
  return absl::OkStatus();
}

absl::Status ProfilePolicy::SyncGates(const cluster::ChangeSet& changes,
                                      const cluster::ClusterState& state,
                                      const ShapeClasses& classes,
                                      NetworkBuilder& builder) {
  // Every term prepared; if one's cluster-wide inputs moved (here or in
  // an ExplainCost since the last sync), every price.
  bool reprice_all = terms_moved_;
  terms_moved_ = false;
  for (WeightedTerm& weighted : terms_) {
    reprice_all = weighted.term->Prepare(state) || reprice_all;
  }
  return gates_.Sync(
      changes, state, classes, Limits(), reprice_all,
      [this](const cluster::Machine& machine, const RequestShape& shape) {
        return PlacementCost(machine, shape, 1);
      },
      builder);
}

absl::Status ProfilePolicy::Reserve(const cluster::ClusterState& state,
                                    const std::vector<RequestShape>& shapes,
                                    const std::map<std::string, NodeId>& nodes,
                                    int64_t now_us, NetworkBuilder& builder) {
  for (WeightedTerm& weighted : terms_) weighted.term->Prepare(state);
  StarvingFirst starving(shapes, now_us, params_.gang_first_after_s);
  starving_ = starving.Keys(shapes);
  // Class -> machine arcs by reservation (request_shapes.h).
  ClassArcs class_arcs;
  if (params_.shape_machines_per_task > 0) {
    absl::flat_hash_set<MachineId> closed;
    if (room_pool_) room_pool_->SetBound(shapes);
    ReserveCapped(state, shapes, starving, builder, class_arcs, closed);
    if (room_pool_) {
      FLOWSCHED_RETURN_IF_ERROR(
          room_pool_->SetArcs(state, closed, params_.tasks, builder));
      const NodeId pool = room_pool_->EnsureNode(builder);
      for (const RequestShape& shape : shapes) {
        if (RoomPool::Takes(shape)) {
          class_arcs[shape.key].push_back({pool, shape.waiting, 0, {}});
        }
      }
    }
  } else {
    ReserveEveryMachine(state, shapes, starving, builder, class_arcs);
  }
  // Classes without waiting tasks go (their in-arcs went with the tasks).
  const uint64_t keep[] = {NetworkBuilder::StableKey(RoomPool::kNodeKey)};
  return SetShapeArcs(nodes, class_arcs, builder,
                      room_pool_ ? std::span<const uint64_t>(keep)
                                 : std::span<const uint64_t>());
}

void ProfilePolicy::ReserveCapped(
    const cluster::ClusterState& state, const std::vector<RequestShape>& shapes,
    StarvingFirst& starving, NetworkBuilder& builder, ClassArcs& class_arcs,
    absl::flat_hash_set<MachineId>& closed) const {
  std::optional<PooledMachines> pooled;
  if (room_pool_ && room_pool_->takes_any()) {
    pooled.emplace();
    pooled->holds = [this](const cluster::Machine& machine) {
      return room_pool_->Holds(machine);
    };
    pooled->takes.reserve(shapes.size());
    for (const RequestShape& shape : shapes) {
      pooled->takes.push_back(RoomPool::Takes(shape));
    }
  }
  ReserveLeastLoaded(
      state, shapes,
      {.per_task = params_.shape_machines_per_task,
       .min_machines = params_.min_shape_machines},
      /*fullest_first=*/params_.pack > params_.spread, Limits(), starving,
      [&](const cluster::Machine& machine, size_t i, int64_t n) {
        if (pooled && pooled->holds(machine)) closed.insert(machine.id);
        class_arcs[shapes[i].key].push_back(ShapeArc(
            machine, builder.FindMachineNode(machine.id), shapes[i], n));
      },
      pooled ? &*pooled : nullptr);
}

void ProfilePolicy::ReserveEveryMachine(const cluster::ClusterState& state,
                                        const std::vector<RequestShape>& shapes,
                                        StarvingFirst& starving,
                                        NetworkBuilder& builder,
                                        ClassArcs& class_arcs) const {
  // Locality profiles: the shapes each rack lists (those planned there,
  // then those whose input is mostly there or with kSecondRackShare of it
  // there), and its machines.
  struct RackShapes {
    std::vector<std::pair<bool, size_t>> shapes;  // (not planned there, i)
    std::vector<size_t> listed;  // the same indices, sorted (for lookups)
    size_t own = 0;              // shapes planned there, the first
    size_t machines = 0;         // of the state
    size_t seen = 0;             // machines of the rack offered so far
  };
  std::map<std::string_view, RackShapes> by_rack;
  if (params_.locality > 0) {
    // Each shape is its planned rack's own (rack_plan.h), and listed in its
    // first input rack and those with kSecondRackShare of its input. The
    // plan is advice: if the solver refuses it (sizes beyond its limits),
    // the lists alone order the offers.
    absl::StatusOr<std::vector<int>> plan =
        PlanRacks(state, shapes, params_.max_tasks_per_machine);
    for (size_t i = 0; i < shapes.size(); ++i) {
      const int planned = plan.ok() ? (*plan)[i] : kNoRack;
      const std::vector<RackShare>& racks = shapes[i].input_racks;
      for (size_t r = 0; r < racks.size(); ++r) {
        if (static_cast<int>(r) == planned) {
          by_rack[racks[r].rack].shapes.push_back({false, i});
        } else if (r == 0 || racks[r].share >= kSecondRackShare) {
          by_rack[racks[r].rack].shapes.push_back({true, i});
        }
      }
    }
    for (const auto& [id, machine] : state.machines()) {
      if (auto rack = by_rack.find(machine.rack); rack != by_rack.end()) {
        ++rack->second.machines;
      }
    }
    // Own shapes first; then largest first (by the dominant CPU, memory or
    // device share of the largest machine), as first-fit decreasing packs.
    const cluster::ResourceVector max_spec = cluster::ComputeMaxSpec(state);
    const auto dominant_share = [&](size_t i) {
      const cluster::ResourceVector share =
          cluster::Normalised(cluster::RequestVector(shapes[i].ask), max_spec);
      return std::max(
          {share.cpu_millis, share.memory_bytes, share.device_milli});
    };
    for (auto& [rack, local] : by_rack) {
      std::stable_sort(local.shapes.begin(), local.shapes.end(),
                       [&](const auto& a, const auto& b) {
                         if (a.first != b.first) return b.first;
                         return dominant_share(a.second) >
                                dominant_share(b.second);
                       });
      local.own = static_cast<size_t>(
          std::partition_point(local.shapes.begin(), local.shapes.end(),
                               [](const auto& e) { return !e.first; }) -
          local.shapes.begin());
      for (const auto& [other, i] : local.shapes) local.listed.push_back(i);
      std::sort(local.listed.begin(), local.listed.end());
    }
  }
  size_t machine_index = 0;
  for (const auto& entry : state.machines()) {
    // Not a structured binding: clang 14 cannot capture one in a lambda.
    const cluster::Machine& machine = entry.second;
    const NodeId machine_node = builder.FindMachineNode(entry.first);
    const auto reserved = [&](size_t i, int64_t n) {
      starving.Reserved(i, n);
      class_arcs[shapes[i].key].push_back(
          ShapeArc(machine, machine_node, shapes[i], n));
    };
    // A copy: reservations on this machine may close a starving shape.
    const std::vector<size_t> first(starving.open().begin(),
                                    starving.open().end());
    const size_t rotation = machine_index++;
    const auto local = by_rack.find(machine.rack);
    if (local == by_rack.end()) {
      ReserveMachine(machine, state, shapes, rotation, reserved, nullptr, first,
                     Limits());
      continue;
    }
    // Locality: the starving shapes, then the rack's own shapes and the
    // others listed there, each list from this machine's offset in it
    // (profile_policy.h says why), then the rotation without those. Drawn
    // one at a time: the room is used up long before a long list ends.
    RackShapes& rack = local->second;
    std::vector<size_t> skip = first;
    std::sort(skip.begin(), skip.end());
    const auto is_first = [&](size_t i) {
      return std::binary_search(skip.begin(), skip.end(), i);
    };
    const size_t others = rack.shapes.size() - rack.own;
    const size_t own_start = rack.seen * rack.own / rack.machines;
    const size_t others_start = rack.seen * others / rack.machines;
    ++rack.seen;
    size_t f = 0;
    size_t a = 0;
    size_t b = 0;
    size_t j = 0;
    MachineRoom(machine, Limits())
        .Offer(
            state, shapes,
            [&]() -> std::optional<size_t> {
              if (f < first.size()) return first[f++];
              while (a < rack.own) {
                const size_t i =
                    rack.shapes[(own_start + a++) % rack.own].second;
                if (!is_first(i)) return i;
              }
              while (b < others) {
                const size_t i =
                    rack.shapes[rack.own + (others_start + b++) % others]
                        .second;
                if (!is_first(i)) return i;
              }
              while (j < shapes.size()) {
                const size_t i = (rotation + j++) % shapes.size();
                if (!is_first(i) && !std::binary_search(rack.listed.begin(),
                                                        rack.listed.end(), i)) {
                  return i;
                }
              }
              return std::nullopt;
            },
            reserved);
  }
}

}  // namespace flowsched::flow
