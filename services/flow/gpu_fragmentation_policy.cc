#include "services/flow/gpu_fragmentation_policy.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/cluster/resource_fit.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_walk.h"

namespace flowsched::flow {
namespace {

// Resolution of the first-fit tie-break: the score is scaled by it, so the
// rank only orders machines of equal score.
constexpr int64_t kRankRange = 10'000;
// A price meaning "no task of the shape fits the machine".
constexpr int64_t kNoFit = std::numeric_limits<int64_t>::min();

// The gate aggregator of a machine (kind kRack: this policy has no racks,
// and shape classes own kEquivalenceClass).
uint64_t GateKey(MachineId machine) {
  return NetworkBuilder::StableKey(
      absl::StrCat("machine-gate|", machine.value()));
}

}  // namespace

bool GpuFragmentationPolicy::RefreshWorkload(
    const cluster::ClusterState& state) {
  const size_t tasks = state.tasks().size();
  const size_t moved = tasks > workload_tasks_ ? tasks - workload_tasks_
                                               : workload_tasks_ - tasks;
  if (workload_built_ && moved * 3 < workload_tasks_) return false;
  std::vector<cluster::TaskSpec> specs;
  specs.reserve(tasks);
  for (const auto& entry : state.tasks()) specs.push_back(entry.second.spec);
  workload_ = cluster::TargetWorkload::Build(specs, params_.workload_coverage);
  workload_tasks_ = tasks;
  workload_built_ = true;
  return true;
}

void GpuFragmentationPolicy::UpdatePrices(
    const cluster::ChangeSet& changes, const cluster::ClusterState& state,
    const std::vector<RequestShape>& shapes, bool workload_rebuilt) {
  // A machine that came or went shifts the ranks of the others; a new
  // largest capacity, best_fit's normalisation.
  const cluster::ResourceVector max_spec = cluster::ComputeMaxSpec(state);
  bool reprice_all = workload_rebuilt ||
                     rank_.size() != state.machines().size() ||
                     max_spec.cpu_millis != max_spec_.cpu_millis ||
                     max_spec.memory_bytes != max_spec_.memory_bytes ||
                     max_spec.device_milli != max_spec_.device_milli;
  for (MachineId id : changes.machines) {
    reprice_all =
        reprice_all || !rank_.contains(id) || state.FindMachine(id) == nullptr;
  }
  if (reprice_all) {
    prices_.clear();
    rank_.clear();
    max_spec_ = max_spec;
    const auto count = static_cast<int64_t>(state.machines().size());
    int64_t index = 0;
    for (const auto& entry : state.machines()) {
      rank_[entry.first] = index++ * kRankRange / count;
    }
  }
  absl::flat_hash_map<std::string, std::map<MachineId, int64_t>> kept;
  for (const RequestShape& shape : shapes) {
    auto old = prices_.find(shape.key);
    std::map<MachineId, int64_t>& fitting = kept[shape.key];
    if (old == prices_.end()) {
      for (const auto& entry : state.machines()) {
        PriceOn(entry.second, state, shape, fitting);
      }
      continue;
    }
    fitting = std::move(old->second);
    for (MachineId id : changes.machines) {
      fitting.erase(id);
      if (const cluster::Machine* machine = state.FindMachine(id)) {
        PriceOn(*machine, state, shape, fitting);
      }
    }
  }
  prices_ = std::move(kept);
}

void GpuFragmentationPolicy::PriceOn(
    const cluster::Machine& machine, const cluster::ClusterState& state,
    const RequestShape& shape, std::map<MachineId, int64_t>& fitting) const {
  if (machine.free_slots() == 0) return;
  const int64_t price = Price(machine, state, shape, rank_.at(machine.id));
  if (price != kNoFit) fitting[machine.id] = price;
}

int64_t GpuFragmentationPolicy::PlacementCost(
    const cluster::Machine& machine, const RequestShape& shape,
    const std::vector<cluster::DeviceShare>& devices, int64_t rank) const {
  const double delta =
      cluster::FragmentationDelta(machine, workload_, shape.ask, devices);
  // Each term rounded on its own, in score levels (or whole GPUs) of
  // `unit` cost units: the most-allocated and the model terms.
  const double unit = params_.score_levels == 0
                          ? static_cast<double>(cluster::kMilliPerDevice)
                          : static_cast<double>(kRankRange);
  int64_t terms = 0;
  if (params_.best_fit > 0) {
    terms += std::llround(
        params_.best_fit *
        cluster::BestFitLeftover(machine, shape.ask, max_spec_) * unit);
  }
  const cluster::AcceleratorRequest& ask = shape.ask.accelerator;
  if (params_.model_affinity > 0 && !ask.preferred_models.empty() &&
      !devices.empty()) {
    size_t other = 0;
    for (const cluster::DeviceShare& share : devices) {
      other += ask.PrefersModel(machine.devices[share.index].model) ? 0 : 1;
    }
    terms += std::llround(params_.model_affinity * static_cast<double>(other) /
                          static_cast<double>(devices.size()) * unit);
  }
  if (params_.score_levels == 0) return std::llround(delta) + terms;
  const double levels = static_cast<double>(params_.score_levels);
  const auto score = static_cast<int64_t>(
      std::floor(levels / (1.0 + std::exp(delta / 1000.0))));
  return (params_.score_levels - score) * kRankRange + terms +
         (params_.first_fit != 0 ? rank : 0);
}

int64_t GpuFragmentationPolicy::Price(const cluster::Machine& machine,
                                      const cluster::ClusterState& state,
                                      const RequestShape& shape,
                                      int64_t rank) const {
  // MachineRoom applies ReserveMachine's rule (slots, labels, different
  // machines, every resource and device); FitTask gives the devices.
  bool fits = false;
  bool offered = false;
  MachineRoom room(machine);
  room.Offer(
      state, {shape},
      [&]() -> std::optional<size_t> {
        if (offered) return std::nullopt;
        offered = true;
        return 0;
      },
      [&](size_t, int64_t n) { fits = n > 0; });
  if (!fits) return kNoFit;
  const cluster::Fit fit = cluster::FitTask(machine, shape.ask);
  if (!fit.fits()) return kNoFit;
  return PlacementCost(machine, shape, fit.devices, rank);
}

absl::Status GpuFragmentationPolicy::Sync(const cluster::ChangeSet& changes,
                                          const cluster::ClusterState& state,
                                          const SyncContext& /*context*/,
                                          NetworkBuilder& builder) {
  // Machines: slots to the sink (running tasks arrive directly).
  FLOWSCHED_RETURN_IF_ERROR(SyncMachinesAndJobsToSink(changes, state, builder));
  const bool workload_rebuilt = RefreshWorkload(state);

  FLOWSCHED_ASSIGN_OR_RETURN(
      const ShapeClasses classes,
      SyncShapeClasses(waiting_, changes, state, params_.unscheduled_cost,
                       params_.preemption_cost, builder));
  UpdatePrices(changes, state, classes.shapes, workload_rebuilt);

  // A gate per machine where a waiting task fits; an arc to it from each
  // shape that fits, at the shape's price there.
  std::map<MachineId, NodeId> gates;
  std::set<uint64_t> live_gates;
  for (const auto& [key, fitting] : prices_) {
    for (const auto& [machine, price] : fitting) gates.try_emplace(machine);
  }
  for (auto& [machine, gate] : gates) {
    const uint64_t key = GateKey(machine);
    gate = builder.EnsureAggregatorNode(NodeKind::kRack, key);
    live_gates.insert(key);
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(
        gate, {{builder.FindMachineNode(machine), 1, 0, {}}}));
  }
  std::map<std::string, std::vector<DesiredArc>> class_arcs;
  for (const auto& [key, fitting] : prices_) {
    std::vector<DesiredArc>& arcs = class_arcs[key];
    for (const auto& [machine, price] : fitting) {
      arcs.push_back({gates.at(machine), 1, price, {}});
    }
  }
  FLOWSCHED_RETURN_IF_ERROR(SetShapeArcs(classes.nodes, class_arcs, builder));
  RemoveAggregatorsExcept(NodeKind::kRack, live_gates, builder);
  return DrainTasksAtSink(builder);
}

}  // namespace flowsched::flow
