#include "services/flow/quincy_policy.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/cluster/input_locality.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_walk.h"
#include "services/flow/request_shapes.h"

namespace flowsched::flow {
namespace {

// One cost unit is 1/1024 of the paper's unit (see the header).
constexpr double kUnitsPerPaperUnit = 1024.0;
constexpr double kBytesPerGb = 1024.0 * 1024.0 * 1024.0;
constexpr double kMicrosPerSecond = 1e6;

std::string VariantName(QuincyVariant variant) {
  switch (variant) {
    case QuincyVariant::kQfp:
      return "quincy-qfp";
    case QuincyVariant::kQf:
      return "quincy-qf";
    case QuincyVariant::kQp:
      return "quincy-qp";
    case QuincyVariant::kQ:
      return "quincy-q";
    case QuincyVariant::kQfpx:
      return "quincy-qfpx";
  }
  return "quincy";
}

int64_t RoundToUnits(double value, int64_t cap) {
  if (!(value < static_cast<double>(cap))) return cap;  // also NaN
  if (value <= 0) return 0;
  return static_cast<int64_t>(std::llround(value));
}

// The step theta is priced in at `run_us` (QuincyParams::theta_bits): a
// power of two times the base step, so the grid points of a coarser step
// are grid points of every finer one and the priced theta never decreases.
int64_t RunStep(int64_t run_us, const QuincyParams& params) {
  const int64_t base = std::max<int64_t>(1, params.theta_step_us);
  int64_t step = base;
  const int bits = std::clamp(params.theta_bits, 0, 62);
  while (step <= INT64_MAX / 2 && run_us / (step * 2) >= (int64_t{1} << bits)) {
    step *= 2;
  }
  return step;
}

// Up to `limit` keys whose bytes exceed `threshold`, most bytes first.
template <typename Key, typename Known>
std::vector<Key> Preferred(const std::vector<std::pair<Key, int64_t>>& bytes,
                           double threshold, size_t limit, const Known& known) {
  std::vector<std::pair<int64_t, Key>> candidates;
  for (const auto& [key, count] : bytes) {
    if (static_cast<double>(count) > threshold && known(key)) {
      candidates.emplace_back(count, key);
    }
  }
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<Key> keys;
  for (size_t i = 0; i < candidates.size() && i < limit; ++i) {
    keys.push_back(candidates[i].second);
  }
  return keys;
}

using QuincyBoundsByJob = QuincyPolicy::QuincyBoundsByJob;

// Section 3.3: A*_j = min(floor(M / K), N_j); leftover slots go equally
// to jobs with more ready tasks, so that sum A_j = min(M, sum N_j). The
// admitted jobs are the first `admitted` of `bounds`.
void QuincyFairShares(size_t admitted, int64_t k, int64_t slots, int64_t demand,
                      QuincyBoundsByJob& bounds) {
  const std::span<std::pair<JobId, QuincyJobBounds>> jobs(bounds.data(),
                                                          admitted);
  int64_t assigned = 0;
  for (auto& [id, b] : jobs) {
    b.share = std::min(slots / k, b.tasks);
    assigned += b.share;
  }
  int64_t leftover = std::min(slots, demand) - assigned;
  while (leftover > 0) {
    int64_t hungry = 0;
    for (const auto& [id, b] : jobs) hungry += b.share < b.tasks;
    if (hungry == 0) break;
    const int64_t each = std::max<int64_t>(1, leftover / hungry);
    for (auto& [id, b] : jobs) {
      const int64_t add = std::min({each, b.tasks - b.share, leftover});
      b.share += add;
      leftover -= add;
      if (leftover == 0) break;
    }
  }
}

// QF (section 4.3): a job running more than its share keeps what it runs,
// and the other jobs' shares are cut in proportion to their size.
void QuincyKeepRunningShares(int64_t slots, int64_t demand,
                             QuincyBoundsByJob& bounds) {
  int64_t total = 0;
  for (auto& [id, b] : bounds) {
    b.share = std::max(b.share, b.running);
    total += b.share;
  }
  int64_t running = 0;
  for (const auto& [id, b] : bounds) running += b.running;
  int64_t excess = total - std::max(std::min(slots, demand), running);
  int64_t base = 0;
  for (const auto& [id, b] : bounds) {
    if (b.share > b.running) base += b.share;
  }
  if (excess <= 0 || base <= 0) return;
  const int64_t to_cut = excess;
  for (auto& [id, b] : bounds) {
    if (b.share <= b.running) continue;
    const int64_t cut = std::min(b.share - b.running, to_cut * b.share / base);
    b.share -= cut;
    excess -= cut;
  }
  // Rounding remainder: one at a time, in job order.
  bool progress = true;
  while (excess > 0 && progress) {
    progress = false;
    for (auto& [id, b] : bounds) {
      if (excess == 0) break;
      if (b.share > b.running) {
        --b.share;
        --excess;
        progress = true;
      }
    }
  }
}

// E_j and F_j from the shares (section 4.3); jobs past admission get 0.
// The admitted jobs are the first `admitted` of `bounds` (ComputeBounds
// admits in job id order), so a position tells admission.
void QuincyVariantBounds(size_t admitted, bool unfair, int64_t slots,
                         int64_t demand, QuincyBoundsByJob& bounds) {
  size_t position = 0;
  for (auto& [id, b] : bounds) {
    if (position++ >= admitted) {
      b.share = 0;
      b.min_running = b.max_running = 0;
    } else if (unfair) {
      // QP: E_j = 1, F_j = N_j; if N <= M then E_j = F_j = N_j so that no
      // computer idles while a locality-seeking task waits.
      b.max_running = b.tasks;
      b.min_running = demand <= slots ? b.tasks : std::min<int64_t>(1, b.tasks);
    } else {
      b.min_running = b.max_running = b.share;
    }
  }
}

// Feasibility (not in the paper, which admits K <= M jobs): the lower
// bounds must fit the slots the flow can reach. Without preemption,
// running tasks are pinned, so F_j covers them and the new placements
// E_j - running_j must fit the free slots. Lower bounds are cut from the
// last job (latest submitted) first.
void QuincyFitLowerBounds(const cluster::ClusterState& state, bool preemptive,
                          int64_t slots, QuincyBoundsByJob& bounds) {
  int64_t budget = slots;
  if (!preemptive) {
    budget = 0;
    for (const auto& [id, machine] : state.machines()) {
      budget += machine.free_slots();
    }
  }
  int64_t need = 0;
  for (auto& [id, b] : bounds) {
    if (!preemptive) b.max_running = std::max(b.max_running, b.running);
    need += preemptive ? b.min_running
                       : std::max<int64_t>(0, b.min_running - b.running);
  }
  for (auto it = bounds.rbegin(); it != bounds.rend() && need > budget; ++it) {
    QuincyJobBounds& b = it->second;
    const int64_t floor = preemptive ? 0 : std::min(b.running, b.min_running);
    const int64_t cut = std::min(need - budget, b.min_running - floor);
    b.min_running -= cut;
    need -= cut;
  }
}

}  // namespace

QuincyParams QuincyParams::ForVariant(QuincyVariant variant) {
  QuincyParams params;
  params.variant = variant;
  if (variant == QuincyVariant::kQfpx) params.xi = 20.0;
  return params;
}

QuincyPolicy::QuincyPolicy(QuincyParams params)
    : params_(params), name_(VariantName(params.variant)) {}

int64_t QuincyPolicy::WaitCost(int64_t wait_us) const {
  return RoundToUnits(params_.omega * kUnitsPerPaperUnit *
                          static_cast<double>(wait_us) / kMicrosPerSecond,
                      params_.omega_cap);
}

int64_t QuincyPolicy::DataCost(int64_t rack_bytes, int64_t core_bytes) const {
  return RoundToUnits((params_.psi * static_cast<double>(rack_bytes) +
                       params_.xi * static_cast<double>(core_bytes)) *
                          kUnitsPerPaperUnit / kBytesPerGb,
                      params_.omega_cap);
}

int64_t QuincyPolicy::UnmetBoundCost() const {
  // Above any placement's cost (at most omega_cap) plus the most a running
  // task's arc can give back (2 * omega_cap), so an unmet bound is the last
  // resort.
  return 4 * params_.omega_cap;
}

int64_t QuincyPolicy::PricedRunMicros(int64_t run_us) const {
  if (run_us <= 0) return 0;
  const int64_t step = RunStep(run_us, params_);
  return run_us / step * step;
}

int64_t QuincyPolicy::NextRunPriceMicros(int64_t run_us) const {
  if (run_us < 0) return 0;
  const int64_t step = RunStep(run_us, params_);
  return run_us / step * step + step;
}

int64_t QuincyPolicy::RunningCost(int64_t data_cost, int64_t run_us) const {
  run_us = PricedRunMicros(run_us);
  // gamma = d* - p* with p* = theta seconds (Appendix). The floor -2 Omega
  // is below -Omega, so a task that ran long enough is never evicted
  // (starvation freedom, section 4.2), and keeps the cost in range.
  const int64_t floor = -2 * params_.omega_cap;
  const int64_t run_cost = RoundToUnits(
      kUnitsPerPaperUnit * static_cast<double>(run_us) / kMicrosPerSecond,
      3 * params_.omega_cap);
  return std::max(floor, data_cost - run_cost - params_.stay_bonus);
}

std::map<JobId, QuincyJobBounds> QuincyPolicy::ComputeBounds(
    const cluster::ClusterState& state) const {
  QuincyBoundsByJob bounds;
  ComputeBounds(state, bounds);
  return {bounds.begin(), bounds.end()};
}

void QuincyPolicy::ComputeBounds(const cluster::ClusterState& state,
                                 QuincyBoundsByJob& bounds) const {
  CountJobs(state, bounds);
  DeriveBounds(state, bounds);
}

void QuincyPolicy::CountJobs(const cluster::ClusterState& state,
                             QuincyBoundsByJob& bounds) {
  bounds.clear();
  bounds.reserve(state.jobs().size());
  for (const auto& [id, job] : state.jobs()) {
    bounds.emplace_back(id, JobCounts(job));
  }
}

QuincyJobBounds QuincyPolicy::JobCounts(const cluster::Job& job) {
  QuincyJobBounds b;
  b.tasks = static_cast<int64_t>(job.tasks.size());
  b.running = job.running;
  return b;
}

void QuincyPolicy::UpdateJobCounts(const cluster::ChangeSet& changes,
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
    CountJobs(state, job_counts_);
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
      at->second = JobCounts(*job);
    } else {
      added.emplace_back(id, JobCounts(*job));
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
    CountJobs(state, job_counts_);  // a change the set did not name
  }
}

void QuincyPolicy::DeriveBounds(const cluster::ClusterState& state,
                                QuincyBoundsByJob& bounds) const {
  const size_t admitted =
      params_.admission_limit == 0
          ? bounds.size()
          : std::min<size_t>(bounds.size(), params_.admission_limit);
  if (admitted == 0) return;
  const auto slots = static_cast<int64_t>(state.total_slots());
  int64_t demand = 0;
  for (size_t i = 0; i < admitted; ++i) demand += bounds[i].second.tasks;
  const auto k = static_cast<int64_t>(
      params_.admission_limit == 0 ? admitted : params_.admission_limit);
  QuincyFairShares(admitted, k, slots, demand, bounds);
  if (params_.variant == QuincyVariant::kQf) {
    QuincyKeepRunningShares(slots, demand, bounds);
  }
  const bool unfair = params_.variant == QuincyVariant::kQp ||
                      params_.variant == QuincyVariant::kQ;
  QuincyVariantBounds(admitted, unfair, slots, demand, bounds);
  QuincyFitLowerBounds(state, preemptive(), slots, bounds);
}

bool QuincyPolicy::TopologyUnchanged(const cluster::ChangeSet& changes,
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

absl::Status QuincyPolicy::SyncTopology(const cluster::ChangeSet& changes,
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
    IndexTopology();
  }
  return absl::OkStatus();
}

void QuincyPolicy::IndexTopology() {
  rack_of_.clear();
  rack_sizes_.clear();
  rack_of_.reserve(topology_.machines.size());
  for (const auto& [rack, machines] : topology_.racks) {
    rack_sizes_[rack] = machines.size();
    for (MachineId id : machines) rack_of_[id] = &rack;
  }
}

absl::Status QuincyPolicy::SyncJobs(const cluster::ChangeSet& changes,
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
  DeriveBounds(state, bounds_);
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

std::vector<int64_t> QuincyPolicy::PriceRacks(
    const cluster::InputLocation& locality, TaskPrices& prices) const {
  const int64_t total = locality.total;
  // Rack worst cases R^R_l, X^R_l and the cluster's R^X, X^X. A rack
  // without input data has B_l = 0 and R^R_l = 0, so only the racks named
  // by the task's entries are visited: B_l, and the smallest L_m of the
  // rack when every one of its computers holds some input (else 0). Kept
  // per entry of locality.in_rack, which is sorted by rack.
  struct RackBytes {
    size_t size = 0;  // computers in the rack; 0: not in the topology
    size_t with_data = 0;
    int64_t smallest = 0;
  };
  const auto& in_rack = locality.in_rack;
  std::vector<RackBytes> data_racks(in_rack.size());
  size_t known_racks = 0;
  for (size_t i = 0; i < in_rack.size(); ++i) {
    auto size = rack_sizes_.find(in_rack[i].first);
    if (size == rack_sizes_.end()) continue;
    data_racks[i] = {size->second, 0, total};
    ++known_racks;
  }
  for (const auto& [id, bytes] : locality.on_machine) {
    auto where = rack_of_.find(id);
    if (where == rack_of_.end()) continue;
    const size_t entry = locality.RackEntry(*where->second);
    if (entry == in_rack.size() || data_racks[entry].size == 0) continue;
    RackBytes& bytes_there = data_racks[entry];
    ++bytes_there.with_data;
    bytes_there.smallest = std::min(bytes_there.smallest, bytes);
  }
  int64_t worst_rack_bytes = 0;
  int64_t min_rack_bytes = total;
  if (known_racks < topology_.racks.size()) {
    min_rack_bytes = std::min<int64_t>(min_rack_bytes, 0);
  }
  std::vector<int64_t> costs(in_rack.size(), 0);
  for (size_t i = 0; i < in_rack.size(); ++i) {
    const RackBytes& bytes = data_racks[i];
    if (bytes.size == 0) continue;
    const int64_t in_bytes = in_rack[i].second;
    const int64_t min_local =
        bytes.with_data == bytes.size ? bytes.smallest : 0;
    worst_rack_bytes = std::max(worst_rack_bytes, in_bytes - min_local);
    min_rack_bytes = std::min(min_rack_bytes, in_bytes);
    costs[i] = DataCost(in_bytes - min_local, total - in_bytes);
  }
  if (topology_.racks.empty()) min_rack_bytes = 0;
  prices.cluster_core_bytes = total - min_rack_bytes;
  prices.alpha = DataCost(worst_rack_bytes, prices.cluster_core_bytes);
  return costs;
}

QuincyPolicy::TaskPrices QuincyPolicy::PriceTask(
    const cluster::Task& task, const cluster::ClusterState& state) const {
  // Where the task's input lives (section 4.2's data-size inputs).
  const cluster::InputLocation locality =
      cluster::LocateInput(task.spec, state);
  const int64_t total = locality.total;
  TaskPrices prices;
  const std::vector<int64_t> rack_costs = PriceRacks(locality, prices);
  const double t = static_cast<double>(total);
  prices.computers = Preferred<MachineId>(
      locality.on_machine, params_.delta_computer * t, params_.max_preferences,
      [&](const MachineId& id) { return rack_of_.contains(id); });
  prices.racks = Preferred<std::string>(
      locality.in_rack, params_.delta_rack * t, params_.max_preferences,
      [&](const std::string& rack) { return rack_sizes_.contains(rack); });
  for (const std::string& rack : prices.racks) {
    // A preferred rack has an entry (and is in the topology).
    prices.rack_costs.push_back(rack_costs[locality.RackEntry(rack)]);
  }
  for (MachineId id : prices.computers) {
    const std::string& rack = *rack_of_.at(id);
    const int64_t in_rack = locality.InRack(rack);
    prices.computer_costs.push_back(
        DataCost(in_rack - locality.OnMachine(id), total - in_rack));
  }
  return prices;
}

int64_t QuincyPolicy::RunningDataCost(MachineId machine,
                                      const std::string& rack,
                                      const TaskPrices& prices) const {
  // d*: exact for a preferred computer; otherwise the paper's
  // approximations (its rack's worst case, or (X^X / P, X^X)).
  auto computer =
      std::find(prices.computers.begin(), prices.computers.end(), machine);
  if (computer != prices.computers.end()) {
    return prices.computer_costs[static_cast<size_t>(computer -
                                                     prices.computers.begin())];
  }
  auto preferred = std::find(prices.racks.begin(), prices.racks.end(), rack);
  if (preferred != prices.racks.end()) {
    return prices
        .rack_costs[static_cast<size_t>(preferred - prices.racks.begin())];
  }
  const auto p = static_cast<int64_t>(topology_.racks.size());
  return DataCost(prices.cluster_core_bytes / std::max<int64_t>(1, p),
                  prices.cluster_core_bytes);
}

absl::Status QuincyPolicy::SyncTask(const cluster::Task& task,
                                    const cluster::ClusterState& state,
                                    int64_t now_us, NetworkBuilder& builder) {
  const TaskId task_id = task.spec.id;
  const NodeId node = builder.EnsureTaskNode(task_id, 1, task.machine);
  const NodeId job_node = builder.FindJobNode(task.job);
  if (job_node == kNoNode) {
    return absl::InternalError(absl::StrCat(
        "task ", task_id.value(), " has no node for job ", task.job.value()));
  }
  const TaskPrices prices = PriceTask(task, state);
  std::vector<DesiredArc> arcs;
  TimePricing pricing;
  const bool asks_for_room = AsksForRoom(task, state);
  if (room_.WaitsForRoom(task_id)) {
    // The same arcs at the same costs, to the shape's aggregators.
    FLOWSCHED_ASSIGN_OR_RETURN(
        RoomRoutes::Targets targets,
        room_.Route(task, prices.racks, prices.computers, builder));
    arcs.push_back({job_node, 1, WaitCost(task.WaitMicros(now_us))});
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
    auto where = rack_of_.find(task.machine);
    if (machine_node == kNoNode || where == rack_of_.end()) {
      return absl::InternalError(
          absl::StrCat("task ", task_id.value(), " runs on machine ",
                       task.machine.value(), " that has no node"));
    }
    const int64_t data = RunningDataCost(task.machine, *where->second, prices);
    arcs.push_back(
        {machine_node, 1, RunningCost(data, task.RunMicros(now_us))});
    pricing = {task.machine, data};
  }
  // QF and Q: a running task keeps only the arc to its computer (the paper
  // sets the others' capacity to 0; leaving them out is the same flow).
  // One that asks for room keeps U_j too when the variant preempts.
  if (task.running() && asks_for_room) {
    if (preemptive()) {
      arcs.push_back({job_node, 1, WaitCost(task.WaitMicros(now_us))});
    }
  } else if (!task.running() || preemptive()) {
    arcs.push_back({job_node, 1, WaitCost(task.WaitMicros(now_us))});
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

int64_t QuincyPolicy::RunningDue(const cluster::Task& task, int64_t data,
                                 int64_t now_us) const {
  const int64_t run_us = task.RunMicros(now_us);
  const int64_t floor = -2 * params_.omega_cap;
  if (RunningCost(data, run_us) <= floor) return kNever;
  const int64_t next = NextRunPriceMicros(run_us);
  return now_us + (next - run_us);
}

void QuincyPolicy::Remember(const cluster::Task& task, TimePricing pricing,
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

void QuincyPolicy::RemoveTask(TaskId id, NetworkBuilder& builder) {
  builder.RemoveTaskNode(id);
  pricing_.erase(id);
  waiting_.erase(id);
}

absl::Status QuincyPolicy::RepriceTask(const cluster::Task& task, NodeId node,
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
        RunningCost(pricing.running_data, task.RunMicros(now_us))));
  }
  if (!task.running() || preemptive()) {
    FLOWSCHED_RETURN_IF_ERROR(
        network.SetArc(node, builder.FindJobNode(task.job), 1,
                       WaitCost(task.WaitMicros(now_us))));
  }
  if (task.running()) Remember(task, pricing, now_us);
  return absl::OkStatus();
}

absl::Status QuincyPolicy::Sync(const cluster::ChangeSet& changes,
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

absl::Status QuincyPolicy::RefreshTask(const cluster::Task& task,
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

absl::Status QuincyPolicy::Refresh(const cluster::ClusterState& state,
                                   const SyncContext& context,
                                   NetworkBuilder& builder) {
  // Wait and running costs grow with time: re-price the waiting tasks and
  // the running tasks whose priced theta stepped (QuincyParams::theta_bits).
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
