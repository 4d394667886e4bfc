#include "services/flow/quincy_room_routes.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_walk.h"

namespace flowsched::flow {
namespace {

// Keys of the class aggregators; names from outside are length-prefixed so
// that no rack name or shape key can imitate another node's key.
uint64_t ShapeNodeKey(const std::string& shape) {
  return NetworkBuilder::StableKey(absl::StrCat("qx|", shape));
}
uint64_t RackNodeKey(const std::string& shape, const std::string& rack) {
  return NetworkBuilder::StableKey(
      absl::StrCat("qr|", rack.size(), "#", rack, "|", shape));
}
uint64_t ComputerNodeKey(const std::string& shape, MachineId machine) {
  return NetworkBuilder::StableKey(
      absl::StrCat("qc|", machine.value(), "|", shape));
}

}  // namespace

void RoomRoutes::Track(TaskId id, const cluster::Task* task,
                       const cluster::ClusterState& state) {
  const bool waits =
      task != nullptr && !task->running() && AsksForRoom(*task, state);
  shapes_.Update(id, task, waits, state);
  auto job = job_of_.find(id);
  if (job != job_of_.end() && (!waits || job->second != task->job)) {
    auto count = waiting_jobs_.find(job->second);
    if (--count->second == 0) waiting_jobs_.erase(count);
    job_of_.erase(job);
    job = job_of_.end();
  }
  if (waits && job == job_of_.end()) {
    job_of_.emplace(id, task->job);
    ++waiting_jobs_[task->job];
  }
  if (!waits) preferences_.erase(id);
}

absl::StatusOr<RoomRoutes::Targets> RoomRoutes::Route(
    const cluster::Task& task, const std::vector<std::string>& racks,
    const std::vector<MachineId>& computers, NetworkBuilder& builder) {
  const std::string* key = shapes_.KeyOf(task.spec.id);
  if (key == nullptr) {
    return absl::InternalError(absl::StrCat("task ", task.spec.id.value(),
                                            " is routed but not tracked"));
  }
  had_routes_ = true;
  Targets targets;
  targets.shape = builder.EnsureAggregatorNode(NodeKind::kEquivalenceClass,
                                               ShapeNodeKey(*key));
  for (const std::string& rack : racks) {
    targets.racks.push_back(builder.EnsureAggregatorNode(
        NodeKind::kEquivalenceClass, RackNodeKey(*key, rack)));
  }
  for (MachineId machine : computers) {
    targets.computers.push_back(builder.EnsureAggregatorNode(
        NodeKind::kEquivalenceClass, ComputerNodeKey(*key, machine)));
  }
  preferences_[task.spec.id] = {racks, computers};
  return targets;
}

absl::Status RoomRoutes::SyncArcs(
    const cluster::ClusterState& state,
    const std::map<std::string, std::vector<MachineId>>& racks,
    NetworkBuilder& builder) {
  if (!had_routes_ && shapes_.size() == 0) return absl::OkStatus();
  const std::vector<RequestShape> shapes = shapes_.Shapes(state);
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < shapes.size(); ++i) index_of[shapes[i].key] = i;

  // What each shape's waiting tasks prefer (ordered: deterministic).
  std::vector<std::set<MachineId>> computers(shapes.size());
  std::vector<std::set<std::string>> pref_racks(shapes.size());
  for (const auto& [id, preferences] : preferences_) {
    const std::string* key = shapes_.KeyOf(id);
    if (key == nullptr) continue;
    auto index = index_of.find(*key);
    if (index == index_of.end()) {
      return absl::InternalError(
          absl::StrCat("waiting task ", id.value(), " has no request shape"));
    }
    const size_t i = index->second;
    computers[i].insert(preferences.computers.begin(),
                        preferences.computers.end());
    pref_racks[i].insert(preferences.racks.begin(), preferences.racks.end());
  }

  // Where each shape is preferred: the computers its tasks prefer, and
  // the machines of the racks they prefer. A rack's machines take its
  // shapes in turn from evenly spread starting points, so that its room is
  // spread over the shapes that want it.
  absl::flat_hash_map<MachineId, std::vector<size_t>> preferring;
  for (size_t i = 0; i < shapes.size(); ++i) {
    for (MachineId m : computers[i]) {
      if (state.FindMachine(m) != nullptr) preferring[m].push_back(i);
    }
  }
  std::map<std::string, std::vector<size_t>> rack_shapes;
  for (size_t i = 0; i < shapes.size(); ++i) {
    for (const std::string& rack : pref_racks[i]) {
      rack_shapes[rack].push_back(i);
    }
  }
  struct RackTurn {
    const std::vector<size_t>* shapes = nullptr;
    size_t start = 0;
  };
  absl::flat_hash_map<MachineId, RackTurn> rack_turn;
  for (const auto& [rack, wanting] : rack_shapes) {
    auto machines = racks.find(rack);
    if (machines == racks.end()) continue;
    std::vector<MachineId> open;
    for (MachineId m : machines->second) {
      const cluster::Machine* machine = state.FindMachine(m);
      if (machine != nullptr && machine->free_slots() > 0) open.push_back(m);
    }
    for (size_t k = 0; k < open.size(); ++k) {
      rack_turn[open[k]] = {&wanting, k * wanting.size() / open.size()};
    }
  }

  // Machines least loaded first, each one's room carried across passes.
  const std::vector<const cluster::Machine*> order =
      MachinesLeastLoadedFirst(state);
  std::vector<MachineRoom> rooms;
  rooms.reserve(order.size());
  for (const cluster::Machine* machine : order) rooms.emplace_back(*machine);

  std::vector<std::map<MachineId, int64_t>> reserved(shapes.size());
  // Machines each shape reserved on in the current pass.
  std::vector<int64_t> in_pass(shapes.size(), 0);
  const auto take = [&](size_t i, MachineId m, int64_t n) {
    reserved[i][m] = n;
    ++in_pass[i];
  };
  const auto usable = [&](size_t i, MachineId m, int64_t cap) {
    return in_pass[i] < cap && !reserved[i].contains(m);
  };
  static const std::vector<size_t> kNone;
  // Offers each machine to the shapes that prefer it as a computer (or
  // else its rack), each shape up to `cap(i)` machines in the pass.
  const auto offer_preferred = [&](bool as_computer, const auto& cap) {
    std::fill(in_pass.begin(), in_pass.end(), 0);
    for (size_t k = 0; k < order.size(); ++k) {
      const MachineId m = order[k]->id;
      auto own_it = as_computer ? preferring.find(m) : preferring.end();
      const std::vector<size_t>& own =
          own_it == preferring.end() ? kNone : own_it->second;
      auto turn_it = as_computer ? rack_turn.end() : rack_turn.find(m);
      const RackTurn turn =
          turn_it == rack_turn.end() ? RackTurn{&kNone, 0} : turn_it->second;
      if ((own.empty() && turn.shapes->empty()) || rooms[k].full()) continue;
      size_t next_own = 0, next_rack = 0;
      rooms[k].Offer(
          state, shapes,
          [&]() -> std::optional<size_t> {
            while (next_own < own.size()) {
              const size_t i = own[next_own++];
              if (usable(i, m, cap(i))) return i;
            }
            const std::vector<size_t>& wanting = *turn.shapes;
            while (next_rack < wanting.size()) {
              const size_t i =
                  wanting[(turn.start + next_rack++) % wanting.size()];
              if (usable(i, m, cap(i))) return i;
            }
            return std::nullopt;
          },
          [&](size_t i, int64_t n) { take(i, m, n); });
    }
  };
  // Offers each machine to the shapes below `cap(i)` machines, round robin
  // across machines so that each gets one before any gets another.
  const auto offer_any = [&](const auto& cap) {
    std::fill(in_pass.begin(), in_pass.end(), 0);
    std::vector<size_t> wanting;
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (cap(i) > 0) wanting.push_back(i);
    }
    size_t cursor = 0;
    for (size_t k = 0; k < order.size() && !wanting.empty(); ++k) {
      if (rooms[k].full()) continue;
      const MachineId m = order[k]->id;
      size_t steps = 0;
      rooms[k].Offer(
          state, shapes,
          [&]() -> std::optional<size_t> {
            while (steps < wanting.size()) {
              ++steps;
              const size_t i = wanting[cursor];
              cursor = (cursor + 1) % wanting.size();
              if (usable(i, m, cap(i))) return i;
            }
            return std::nullopt;
          },
          [&](size_t i, int64_t n) { take(i, m, n); });
    }
  };
  // Every computer a shape's tasks prefer, then machines of the racks
  // they prefer, then, for a shape with too little room where it is
  // preferred, a few machines anywhere (a reservation is exclusive, so
  // reserving anywhere for every shape would spend a full cluster's room
  // on shapes that have better choices).
  offer_preferred(true, [](size_t) { return INT64_MAX; });
  offer_preferred(false, [&](size_t i) {
    return std::max(params_.min_rack_machines,
                    params_.rack_machines_per_task * shapes[i].waiting);
  });
  std::vector<bool> covered(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    int64_t units = 0;
    for (const auto& [m, n] : reserved[i]) units += n;
    covered[i] = units >= shapes[i].waiting;
  }
  offer_any([&](size_t i) {
    return covered[i]
               ? 0
               : std::max(params_.min_shape_machines,
                          params_.shape_machines_per_task * shapes[i].waiting);
  });

  // Each shape's tree: one arc into each machine it reserved on.
  std::set<uint64_t> live;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string& key = shapes[i].key;
    const NodeId shape_node = builder.EnsureAggregatorNode(
        NodeKind::kEquivalenceClass, ShapeNodeKey(key));
    live.insert(ShapeNodeKey(key));
    const std::map<MachineId, int64_t>& on = reserved[i];
    std::map<std::string, std::vector<DesiredArc>> rack_arcs;
    std::map<std::string, int64_t> rack_total;
    std::vector<DesiredArc> shape_arcs;
    for (MachineId m : computers[i]) {
      const uint64_t node_key = ComputerNodeKey(key, m);
      live.insert(node_key);
      const NodeId node =
          builder.EnsureAggregatorNode(NodeKind::kEquivalenceClass, node_key);
      auto n = on.find(m);
      std::vector<DesiredArc> arcs;
      if (n != on.end())
        arcs.push_back({builder.FindMachineNode(m), n->second, 0});
      FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, arcs));
    }
    for (const auto& [m, n] : on) {
      const cluster::Machine* machine = state.FindMachine(m);
      const NodeId target =
          computers[i].contains(m)
              ? builder.FindAggregatorNode(NodeKind::kEquivalenceClass,
                                           ComputerNodeKey(key, m))
              : builder.FindMachineNode(m);
      if (pref_racks[i].contains(machine->rack)) {
        rack_arcs[machine->rack].push_back({target, n, 0});
        rack_total[machine->rack] += n;
      } else {
        shape_arcs.push_back({target, n, 0});
      }
    }
    for (const std::string& rack : pref_racks[i]) {
      const uint64_t node_key = RackNodeKey(key, rack);
      live.insert(node_key);
      const NodeId node =
          builder.EnsureAggregatorNode(NodeKind::kEquivalenceClass, node_key);
      FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, rack_arcs[rack]));
      if (rack_total[rack] > 0) {
        shape_arcs.push_back({node, rack_total[rack], 0});
      }
    }
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(shape_node, shape_arcs));
  }
  RemoveAggregatorsExcept(NodeKind::kEquivalenceClass, live, builder);
  had_routes_ = !shapes.empty();
  return absl::OkStatus();
}

}  // namespace flowsched::flow
