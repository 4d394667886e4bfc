#include "services/flow/quincy_network.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_walk.h"
#include "services/flow/request_shapes.h"

namespace flowsched::flow {

QuincyNetwork::QuincyNetwork(QuincyNetworkParams params,
                             FairnessParams fairness, RoomPricing room_pricing)
    : params_(params),
      preemptive_(fairness.preemptive),
      wait_(params.omega, params.omega_cap),
      running_(params.theta_step_us, params.theta_bits, params.omega_cap,
               params.stay_bonus),
      data_({.psi = params.psi,
             .xi = params.xi,
             .delta_computer = params.delta_computer,
             .delta_rack = params.delta_rack,
             .max_preferences = params.max_preferences,
             .cap = params.omega_cap}),
      fairness_(fairness),
      room_(RoomRouteParams{}, std::move(room_pricing)) {}

int64_t QuincyNetwork::UnmetBoundCost() const {
  // Above any placement's cost (a data cost of at most omega_cap, plus a
  // profile's class price below omega_cap, CheckProfile) plus the most a
  // running task's arc can give back (2 * omega_cap), so an unmet bound is
  // the last resort.
  return 4 * params_.omega_cap;
}

std::map<JobId, QuincyJobBounds> QuincyNetwork::ComputeBounds(
    const cluster::ClusterState& state) const {
  QuincyBoundsByJob bounds;
  ComputeBounds(state, bounds);
  return {bounds.begin(), bounds.end()};
}

void QuincyNetwork::ComputeBounds(const cluster::ClusterState& state,
                                  QuincyBoundsByJob& bounds) const {
  FairnessTerm::CountJobs(state, bounds);
  fairness_.Derive(state, bounds);
}

void QuincyNetwork::UpdateJobCounts(const cluster::ChangeSet& changes,
                                    const cluster::ClusterState& state) {
  // A job's N_j changes with a submission or an end (the job is in the
  // change set), its running count with a placement, preemption, migration
  // or machine loss (the task is).
  std::vector<JobId> touched(changes.jobs.begin(), changes.jobs.end());
  for (TaskId id : changes.tasks) {
    if (const cluster::Task* task = state.FindTask(id)) {
      touched.push_back(task->job);
    }
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  // Many jobs touched (a time-0 population): one walk is cheaper than a
  // lookup of each in the state and in the list.
  if (!job_counts_valid_ ||
      touched.size() * 8 > std::max<size_t>(job_counts_.size(), 64)) {
    FairnessTerm::CountJobs(state, job_counts_);
    job_counts_valid_ = true;
    return;
  }
  // Listed jobs change in place; jobs that came or went are merged in one
  // pass over the list, not inserted or erased one at a time.
  QuincyBoundsByJob added;  // job id ascending, as `touched`
  bool removed = false;
  for (JobId id : touched) {
    auto at = std::lower_bound(
        job_counts_.begin(), job_counts_.end(), id,
        [](const auto& entry, JobId job) { return entry.first < job; });
    const bool listed = at != job_counts_.end() && at->first == id;
    const cluster::Job* job = state.FindJob(id);
    if (job == nullptr) {
      if (listed) {
        at->second.tasks = -1;  // gone: erased below
        removed = true;
      }
    } else if (listed) {
      at->second = FairnessTerm::Counts(*job);
    } else {
      added.emplace_back(id, FairnessTerm::Counts(*job));
    }
  }
  if (removed) {
    std::erase_if(job_counts_,
                  [](const auto& entry) { return entry.second.tasks < 0; });
  }
  if (!added.empty()) {
    const auto middle = static_cast<std::ptrdiff_t>(job_counts_.size());
    job_counts_.insert(job_counts_.end(), added.begin(), added.end());
    std::inplace_merge(
        job_counts_.begin(), job_counts_.begin() + middle, job_counts_.end(),
        [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  if (job_counts_.size() != state.jobs().size()) {
    FairnessTerm::CountJobs(state,
                            job_counts_);  // a change the set did not name
  }
}

bool QuincyNetwork::TopologyUnchanged(
    const cluster::ChangeSet& changes,
    const cluster::ClusterState& state) const {
  if (!synced_ || state.machines().size() != topology_.machines.size()) {
    return false;
  }
  for (MachineId id : changes.machines) {
    const cluster::Machine* machine = state.FindMachine(id);
    auto known = topology_.machines.find(id);
    if ((machine == nullptr) != (known == topology_.machines.end())) {
      return false;
    }
    if (machine != nullptr && (known->second.first != machine->rack ||
                               known->second.second != machine->task_slots)) {
      return false;
    }
  }
  return true;
}

absl::Status QuincyNetwork::SyncTopology(const cluster::ChangeSet& changes,
                                         const cluster::ClusterState& state,
                                         NetworkBuilder& builder,
                                         bool& changed) {
  FlowNetwork& network = builder.network();
  const NodeId sink = builder.EnsureSink();
  const NodeId aggregator = builder.EnsureClusterAggregator();
  // Placements name their machine in every change set, so the whole
  // topology is only rebuilt (and compared) when a machine's rack or slots
  // changed, or one came or went.
  Topology topology;
  if (TopologyUnchanged(changes, state)) {
    changed = false;
  } else {
    for (const auto& [id, machine] : state.machines()) {
      topology.machines[id] = {machine.rack, machine.task_slots};
      topology.racks[machine.rack].push_back(id);
    }
    changed = !(topology == topology_);
  }
  std::set<MachineId> resync;
  for (MachineId id : changes.machines) resync.insert(id);
  if (changed) {
    for (const auto& [id, entry] : topology_.machines) resync.insert(id);
    for (const auto& [id, entry] : topology.machines) resync.insert(id);
  }
  for (MachineId id : resync) {
    const cluster::Machine* machine = state.FindMachine(id);
    if (machine == nullptr) {
      builder.RemoveMachineNode(id);
      continue;
    }
    const NodeId node = builder.EnsureMachineNode(id);
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(
        node, {{sink, static_cast<int64_t>(machine->task_slots), 0}}));
  }
  if (changed) {
    // Racks that lost their last machine (also across a restore, where the
    // builder knows the rack nodes by key only).
    std::set<uint64_t> live_racks;
    for (const auto& [rack, machines] : topology.racks) {
      live_racks.insert(NetworkBuilder::StableKey(rack));
    }
    RemoveAggregatorsExcept(NodeKind::kRack, live_racks, builder);
    for (const auto& [rack, machines] : topology.racks) {
      const NodeId rack_node = builder.EnsureRackNode(rack);
      std::vector<DesiredArc> arcs;
      int64_t rack_slots = 0;
      for (MachineId id : machines) {
        const auto slots = static_cast<int64_t>(topology.machines[id].second);
        rack_slots += slots;
        arcs.push_back({builder.FindMachineNode(id), slots, 0});
      }
      // X -> R_l carries P_l (here: the rack's slots), R_l -> C_m the
      // computer's slots (Appendix).
      FLOWSCHED_RETURN_IF_ERROR(
          network.SetArc(aggregator, rack_node, rack_slots, 0));
      FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(rack_node, arcs));
    }
    topology_ = std::move(topology);
    data_.Index(topology_.racks);
  }
  return absl::OkStatus();
}

absl::Status QuincyNetwork::SyncJobs(const cluster::ChangeSet& changes,
                                     const cluster::ClusterState& state,
                                     NetworkBuilder& builder) {
  FlowNetwork& network = builder.network();
  const NodeId sink = builder.EnsureSink();
  for (JobId id : changes.jobs) {
    if (state.FindJob(id) == nullptr) builder.RemoveJobNode(id);
  }
  // Shares depend on every job (section 3.3), so all U_j are re-derived;
  // only real changes reach the log.
  int64_t unscheduled_supply = 0;
  // The counts are UpdateJobCounts', kept from change set to change set.
  bounds_ = job_counts_;
  fairness_.Derive(state, bounds_);
  for (const auto& [id, b] : bounds_) {
    const NodeId node = builder.EnsureJobNode(id);
    // Minimum-flow transform (Appendix): supply F_j - N_j at U_j and
    // capacity F_j - E_j to the sink give E_j <= scheduled <= F_j.
    const int64_t supply = b.max_running - b.tasks;
    unscheduled_supply += supply;
    DesiredArc to_sink{sink, b.max_running - b.min_running, 0, {}};
    // Room may not exist for E_j of a job whose tasks wait for room, and
    // while any gang lives a round's gang passes may block any job's
    // waiting tasks (core/gang_rule.h): then below E_j each unscheduled
    // task costs UnmetBoundCost() instead of making the round infeasible.
    if (b.min_running > 0 &&
        (room_.JobWaitsForRoom(id) || !state.gang_jobs().empty())) {
      to_sink.extra_segments.push_back({b.min_running, UnmetBoundCost()});
    }
    // Most jobs' bounds stay put from one round to the next: a node
    // already as desired is left alone (SetOutArcs would find the same,
    // at the cost of building and diffing its arc list).
    const std::optional<ArcView> arc = network.SoleOutArc(node);
    if (network.node(node).supply == supply && arc.has_value() &&
        arc->dst == sink && arc->capacity == to_sink.capacity &&
        arc->cost == to_sink.cost &&
        std::ranges::equal(arc->extra_segments, to_sink.extra_segments)) {
      continue;
    }
    FLOWSCHED_RETURN_IF_ERROR(network.UpdateNode(node, supply, 0));
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, {to_sink}));
  }
  // Task supplies come after; the sink takes whatever is left so that the
  // supplies sum to zero once every task has its node.
  sink_offset_ = unscheduled_supply;
  return absl::OkStatus();
}

absl::Status QuincyNetwork::SyncTask(const cluster::Task& task,
                                     const cluster::ClusterState& state,
                                     int64_t now_us, NetworkBuilder& builder) {
  const TaskId task_id = task.spec.id;
  const NodeId node = builder.EnsureTaskNode(task_id, 1, task.machine);
  const NodeId job_node = builder.FindJobNode(task.job);
  if (job_node == kNoNode) {
    return absl::InternalError(absl::StrCat(
        "task ", task_id.value(), " has no node for job ", task.job.value()));
  }
  const DataLocalityTerm::TaskPrices prices = data_.Price(task, state);
  std::vector<DesiredArc> arcs;
  TimePricing pricing;
  const bool asks_for_room = AsksForRoom(task, state);
  if (room_.WaitsForRoom(task_id)) {
    // The same arcs at the same costs, to the shape's aggregators.
    FLOWSCHED_ASSIGN_OR_RETURN(RoomRoutes::Targets targets,
                               room_.Route(task, prices, builder));
    arcs.push_back({job_node, 1, wait_.Cost(task.WaitMicros(now_us))});
    arcs.push_back({targets.shape, 1, prices.alpha});
    for (size_t i = 0; i < prices.racks.size(); ++i) {
      arcs.push_back({targets.racks[i], 1, prices.rack_costs[i]});
    }
    for (size_t i = 0; i < prices.computers.size(); ++i) {
      arcs.push_back({targets.computers[i], 1, prices.computer_costs[i]});
    }
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, arcs));
    Remember(task, pricing, now_us);
    return absl::OkStatus();
  }
  if (task.running()) {
    const NodeId machine_node = builder.FindMachineNode(task.machine);
    const std::string* rack = data_.RackOf(task.machine);
    if (machine_node == kNoNode || rack == nullptr) {
      return absl::InternalError(
          absl::StrCat("task ", task_id.value(), " runs on machine ",
                       task.machine.value(), " that has no node"));
    }
    const int64_t data = data_.RunningCost(task.machine, *rack, prices);
    arcs.push_back(
        {machine_node, 1, running_.Cost(data, task.RunMicros(now_us))});
    pricing = {task.machine, data};
  }
  // QF and Q: a running task keeps only the arc to its computer (the paper
  // sets the others' capacity to 0; leaving them out is the same flow).
  // One that asks for room keeps U_j too when the variant preempts.
  if (task.running() && asks_for_room) {
    if (preemptive_) {
      arcs.push_back({job_node, 1, wait_.Cost(task.WaitMicros(now_us))});
    }
  } else if (!task.running() || preemptive_) {
    arcs.push_back({job_node, 1, wait_.Cost(task.WaitMicros(now_us))});
    arcs.push_back({builder.cluster_aggregator(), 1, prices.alpha});
    for (size_t i = 0; i < prices.racks.size(); ++i) {
      arcs.push_back(
          {builder.FindRackNode(prices.racks[i]), 1, prices.rack_costs[i]});
    }
    for (size_t i = 0; i < prices.computers.size(); ++i) {
      const MachineId id = prices.computers[i];
      if (id == task.machine) continue;  // already priced as running
      arcs.push_back(
          {builder.FindMachineNode(id), 1, prices.computer_costs[i]});
    }
  }
  FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, arcs));
  Remember(task, pricing, now_us);
  return absl::OkStatus();
}

int64_t QuincyNetwork::RunningDue(const cluster::Task& task, int64_t data,
                                  int64_t now_us) const {
  const int64_t after = running_.NextChangeMicros(data, task.RunMicros(now_us));
  return after == RunningTimeTerm::kNever ? kNever : now_us + after;
}

void QuincyNetwork::Remember(const cluster::Task& task, TimePricing pricing,
                             int64_t now_us) {
  if (task.running()) {
    pricing.due_us = RunningDue(task, pricing.running_data, now_us);
    if (pricing.due_us != kNever) due_.emplace(pricing.due_us, task.spec.id);
    waiting_.erase(task.spec.id);
  } else {
    pricing.due_us = kNever;
    waiting_.insert(task.spec.id);
  }
  pricing_[task.spec.id] = pricing;
}

void QuincyNetwork::RemoveTask(TaskId id, NetworkBuilder& builder) {
  builder.RemoveTaskNode(id);
  pricing_.erase(id);
  waiting_.erase(id);
}

absl::Status QuincyNetwork::RepriceTask(const cluster::Task& task, NodeId node,
                                        const TimePricing& pricing,
                                        int64_t now_us,
                                        NetworkBuilder& builder) {
  // The same arcs and costs SyncTask gives them; the others do not depend
  // on time. SetArc records nothing when the cost is unchanged.
  FlowNetwork& network = builder.network();
  if (task.running()) {
    const NodeId machine_node = builder.FindMachineNode(task.machine);
    FLOWSCHED_RETURN_IF_ERROR(network.SetArc(
        node, machine_node, 1,
        running_.Cost(pricing.running_data, task.RunMicros(now_us))));
  }
  if (!task.running() || preemptive_) {
    FLOWSCHED_RETURN_IF_ERROR(
        network.SetArc(node, builder.FindJobNode(task.job), 1,
                       wait_.Cost(task.WaitMicros(now_us))));
  }
  if (task.running()) Remember(task, pricing, now_us);
  return absl::OkStatus();
}

absl::Status QuincyNetwork::Sync(const cluster::ChangeSet& changes,
                                 const cluster::ClusterState& state,
                                 const SyncContext& context,
                                 NetworkBuilder& builder) {
  // First, so that the counts follow every change set even when a step
  // below fails.
  UpdateJobCounts(changes, state);
  bool topology_changed = false;
  FLOWSCHED_RETURN_IF_ERROR(
      SyncTopology(changes, state, builder, topology_changed));
  if (topology_changed) {
    for (TaskId id : changes.tasks) room_.Track(id, state.FindTask(id), state);
    for (const auto& [id, task] : state.tasks()) room_.Track(id, &task, state);
  } else {
    for (TaskId id : changes.tasks) room_.Track(id, state.FindTask(id), state);
  }
  FLOWSCHED_RETURN_IF_ERROR(SyncJobs(changes, state, builder));
  synced_ = true;
  if (topology_changed) {
    // Preference lists name computers and racks: re-derive every task.
    for (TaskId id : changes.tasks) {
      if (state.FindTask(id) == nullptr) RemoveTask(id, builder);
    }
    pricing_.clear();
    waiting_.clear();
    due_ = {};
    for (const auto& [id, task] : state.tasks()) {
      FLOWSCHED_RETURN_IF_ERROR(SyncTask(task, state, context.now_us, builder));
    }
  } else {
    for (TaskId id : changes.tasks) {
      const cluster::Task* task = state.FindTask(id);
      if (task == nullptr) {
        RemoveTask(id, builder);
        continue;
      }
      FLOWSCHED_RETURN_IF_ERROR(
          SyncTask(*task, state, context.now_us, builder));
    }
  }
  // The room trees walk every waiting task's preferences and the machines,
  // whatever changed: left to the Refresh before the next solve when one
  // follows.
  if (context.refresh_follows) {
    room_owed_ = true;
  } else {
    FLOWSCHED_RETURN_IF_ERROR(room_.SyncArcs(state, topology_.racks, builder));
    room_owed_ = false;
  }
  return DrainTasksAtSink(builder, sink_offset_);
}

absl::Status QuincyNetwork::RefreshTask(const cluster::Task& task,
                                        const cluster::ClusterState& state,
                                        int64_t now_us,
                                        NetworkBuilder& builder) {
  const TaskId id = task.spec.id;
  const NodeId node = builder.FindTaskNode(id);
  auto pricing = pricing_.find(id);
  if (node == kNoNode || pricing == pricing_.end() ||
      pricing->second.machine !=
          (task.running() ? task.machine : MachineId())) {
    return SyncTask(task, state, now_us, builder);
  }
  const TimePricing copy = pricing->second;  // Remember may rehash
  return RepriceTask(task, node, copy, now_us, builder);
}

absl::Status QuincyNetwork::Refresh(const cluster::ClusterState& state,
                                    const SyncContext& context,
                                    NetworkBuilder& builder) {
  // Wait and running costs grow with time: re-price the waiting tasks and
  // the running tasks whose priced theta stepped (terms/running_time_term.h).
  // Topology and job bounds do not depend on time, so after a Sync
  // (REQUIRES: for every change) they stand; a fresh policy over a restored
  // network derives them here once.
  if (!synced_) {
    cluster::ChangeSet none;
    bool topology_changed = false;
    FLOWSCHED_RETURN_IF_ERROR(
        SyncTopology(none, state, builder, topology_changed));
    for (const auto& [id, task] : state.tasks()) room_.Track(id, &task, state);
    UpdateJobCounts(none, state);
    FLOWSCHED_RETURN_IF_ERROR(SyncJobs(none, state, builder));
    synced_ = true;
    // The restored room trees may be owed (left by a Sync before a crash).
    room_owed_ = true;
  }
  if (pricing_.size() != state.tasks().size()) {
    // Tasks this policy never priced (a restored network): visit all.
    for (const auto& [id, task] : state.tasks()) {
      FLOWSCHED_RETURN_IF_ERROR(
          RefreshTask(task, state, context.now_us, builder));
    }
    FLOWSCHED_RETURN_IF_ERROR(room_.SyncArcs(state, topology_.racks, builder));
    room_owed_ = false;
  } else {
    // Waiting tasks' wait costs grow every round; running tasks change
    // price only at their due time.
    const std::vector<TaskId> waiting(waiting_.begin(), waiting_.end());
    for (TaskId id : waiting) {
      if (const cluster::Task* task = state.FindTask(id)) {
        FLOWSCHED_RETURN_IF_ERROR(
            RefreshTask(*task, state, context.now_us, builder));
      }
    }
    while (!due_.empty() && due_.top().first <= context.now_us) {
      const auto [due_us, id] = due_.top();
      due_.pop();
      auto pricing = pricing_.find(id);
      if (pricing == pricing_.end() || pricing->second.due_us != due_us) {
        continue;  // stale: re-priced or removed since
      }
      if (const cluster::Task* task = state.FindTask(id)) {
        FLOWSCHED_RETURN_IF_ERROR(
            RefreshTask(*task, state, context.now_us, builder));
      }
    }
    if (room_owed_) {
      FLOWSCHED_RETURN_IF_ERROR(
          room_.SyncArcs(state, topology_.racks, builder));
      room_owed_ = false;
    }
  }
  return DrainTasksAtSink(builder, sink_offset_);
}

}  // namespace flowsched::flow
