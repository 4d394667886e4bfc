#include "services/flow/machine_gates.h"

#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_walk.h"

namespace flowsched::flow {
namespace {

// A machine's gate is an aggregator of kind kRack: gated profiles have no
// racks (locality is refused with a gate), and shape classes own
// kEquivalenceClass.
uint64_t GateKey(MachineId machine) {
  return NetworkBuilder::StableKey(
      absl::StrCat("machine-gate|", machine.value()));
}

}  // namespace

void MachineGates::PriceOn(const cluster::Machine& machine,
                           const cluster::ClusterState& state,
                           const RequestShape& shape, RoomLimits limits,
                           const Price& price,
                           std::map<MachineId, int64_t>& fitting) {
  if (machine.free_slots() == 0) return;
  // MachineRoom applies ReserveMachine's rule on a copy of the machine's
  // room, with the fit rule itself for devices (never looser than FitTask
  // on the machine), so a shape it admits fits.
  bool fits = false;
  bool offered = false;
  MachineRoom(machine, limits)
      .Offer(
          state, {shape},
          [&]() -> std::optional<size_t> {
            if (offered) return std::nullopt;
            offered = true;
            return 0;
          },
          [&](size_t, int64_t n) { fits = n > 0; });
  if (!fits) return;
  fitting[machine.id] = price(machine, shape);
}

bool MachineGates::SamePricing(const RequestShape& a, const RequestShape& b) {
  return a.ask.request == b.ask.request &&
         a.ask.accelerator == b.ask.accelerator &&
         a.ask.required_labels == b.ask.required_labels &&
         a.preferred == b.preferred &&
         a.different_machines_job == b.different_machines_job &&
         a.covered_fractions == b.covered_fractions &&
         a.input_racks == b.input_racks;
}

absl::Status MachineGates::Sync(const cluster::ChangeSet& changes,
                                const cluster::ClusterState& state,
                                const ShapeClasses& classes, RoomLimits limits,
                                bool reprice_all, const Price& price,
                                NetworkBuilder& builder) {
  if (reprice_all) kept_.clear();
  absl::flat_hash_map<std::string, KeptShape> kept;
  for (const RequestShape& shape : classes.shapes) {
    auto old = kept_.find(shape.key);
    KeptShape& entry = kept[shape.key];
    if (old == kept_.end() || !SamePricing(old->second.shape, shape)) {
      entry.shape = shape;
      for (const auto& machine : state.machines()) {
        PriceOn(machine.second, state, shape, limits, price, entry.prices);
      }
      continue;
    }
    entry = std::move(old->second);
    for (MachineId id : changes.machines) {
      entry.prices.erase(id);
      if (const cluster::Machine* machine = state.FindMachine(id)) {
        PriceOn(*machine, state, shape, limits, price, entry.prices);
      }
    }
  }
  kept_ = std::move(kept);

  // A gate per machine some shape reaches; an arc to it from each.
  std::map<MachineId, NodeId> gates;
  std::set<uint64_t> live_gates;
  for (const auto& [key, entry] : kept_) {
    for (const auto& [machine, cost] : entry.prices) {
      gates.try_emplace(machine);
    }
  }
  for (auto& [machine, gate] : gates) {
    const uint64_t key = GateKey(machine);
    gate = builder.EnsureAggregatorNode(NodeKind::kRack, key);
    live_gates.insert(key);
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(
        gate, {{builder.FindMachineNode(machine), 1, 0, {}}}));
  }
  std::map<std::string, std::vector<DesiredArc>> class_arcs;
  for (const auto& [key, entry] : kept_) {
    std::vector<DesiredArc>& arcs = class_arcs[key];
    for (const auto& [machine, cost] : entry.prices) {
      arcs.push_back({gates.at(machine), 1, cost, {}});
    }
  }
  FLOWSCHED_RETURN_IF_ERROR(SetShapeArcs(classes.nodes, class_arcs, builder));
  RemoveAggregatorsExcept(NodeKind::kRack, live_gates, builder);
  return absl::OkStatus();
}

}  // namespace flowsched::flow
