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

// A rack's machines take its shapes in turn: `shapes` from `start` on.
struct RoomRackTurn {
  const std::vector<size_t>* shapes = nullptr;
  size_t start = 0;
};

// Where each shape (by index) is preferred: the computers its tasks prefer
// (`preferring`: machine -> shapes), and the machines of the racks they
// prefer. A rack's machines take its shapes in turn from evenly spread
// starting points, so that its room is spread over the shapes that want
// it. `rack_turn` points into `rack_shapes`.
struct RoomPreferredPlaces {
  absl::flat_hash_map<MachineId, std::vector<size_t>> preferring;
  std::map<std::string, std::vector<size_t>> rack_shapes;
  absl::flat_hash_map<MachineId, RoomRackTurn> rack_turn;
};

void FindRoomPreferredPlaces(
    const cluster::ClusterState& state,
    const std::map<std::string, std::vector<MachineId>>& racks,
    const std::vector<std::set<MachineId>>& computers,
    const std::vector<std::set<std::string>>& pref_racks,
    RoomPreferredPlaces& places) {
  for (size_t i = 0; i < computers.size(); ++i) {
    for (MachineId m : computers[i]) {
      if (state.FindMachine(m) != nullptr) places.preferring[m].push_back(i);
    }
  }
  for (size_t i = 0; i < pref_racks.size(); ++i) {
    for (const std::string& rack : pref_racks[i]) {
      places.rack_shapes[rack].push_back(i);
    }
  }
  for (const auto& [rack, wanting] : places.rack_shapes) {
    auto machines = racks.find(rack);
    if (machines == racks.end()) continue;
    std::vector<MachineId> open;
    for (MachineId m : machines->second) {
      const cluster::Machine* machine = state.FindMachine(m);
      if (machine != nullptr && machine->free_slots() > 0) open.push_back(m);
    }
    for (size_t k = 0; k < open.size(); ++k) {
      places.rack_turn[open[k]] = {&wanting, k * wanting.size() / open.size()};
    }
  }
}

// Reserves the machines' free room among the shapes in passes over the
// machines, least loaded first, each machine's room carried across passes.
// A shape reserves on a machine at most once; within a pass, on at most
// `cap(i)` machines.
class RoomReserver {
 public:
  RoomReserver(const cluster::ClusterState& state,
               const std::vector<RequestShape>& shapes)
      : state_(state),
        shapes_(shapes),
        order_(MachinesLeastLoadedFirst(state)),
        reserved_(shapes.size()),
        in_pass_(shapes.size(), 0) {
    rooms_.reserve(order_.size());
    for (const cluster::Machine* machine : order_) {
      rooms_.emplace_back(*machine);
    }
  }

  // Offers each machine to the shapes that prefer it as a computer (or
  // else its rack), each shape up to `cap(i)` machines in the pass.
  template <typename Cap>
  void OfferPreferred(const RoomPreferredPlaces& places, bool as_computer,
                      const Cap& cap) {
    static const std::vector<size_t> kNone;
    std::fill(in_pass_.begin(), in_pass_.end(), 0);
    for (size_t k = 0; k < order_.size(); ++k) {
      const MachineId m = order_[k]->id;
      auto own_it =
          as_computer ? places.preferring.find(m) : places.preferring.end();
      const std::vector<size_t>& own =
          own_it == places.preferring.end() ? kNone : own_it->second;
      auto turn_it =
          as_computer ? places.rack_turn.end() : places.rack_turn.find(m);
      const RoomRackTurn turn = turn_it == places.rack_turn.end()
                                    ? RoomRackTurn{&kNone, 0}
                                    : turn_it->second;
      if ((own.empty() && turn.shapes->empty()) || rooms_[k].full()) continue;
      size_t next_own = 0, next_rack = 0;
      rooms_[k].Offer(
          state_, shapes_,
          [&]() -> std::optional<size_t> {
            while (next_own < own.size()) {
              const size_t i = own[next_own++];
              if (Usable(i, m, cap(i))) return i;
            }
            const std::vector<size_t>& wanting = *turn.shapes;
            while (next_rack < wanting.size()) {
              const size_t i =
                  wanting[(turn.start + next_rack++) % wanting.size()];
              if (Usable(i, m, cap(i))) return i;
            }
            return std::nullopt;
          },
          [&](size_t i, int64_t n) { Take(i, m, n); });
    }
  }

  // Offers each machine to the shapes below `cap(i)` machines, round robin
  // across machines so that each gets one before any gets another.
  template <typename Cap>
  void OfferAny(const Cap& cap) {
    std::fill(in_pass_.begin(), in_pass_.end(), 0);
    std::vector<size_t> wanting;
    for (size_t i = 0; i < shapes_.size(); ++i) {
      if (cap(i) > 0) wanting.push_back(i);
    }
    size_t cursor = 0;
    for (size_t k = 0; k < order_.size() && !wanting.empty(); ++k) {
      if (rooms_[k].full()) continue;
      const MachineId m = order_[k]->id;
      size_t steps = 0;
      rooms_[k].Offer(
          state_, shapes_,
          [&]() -> std::optional<size_t> {
            while (steps < wanting.size()) {
              ++steps;
              const size_t i = wanting[cursor];
              cursor = (cursor + 1) % wanting.size();
              if (Usable(i, m, cap(i))) return i;
            }
            return std::nullopt;
          },
          [&](size_t i, int64_t n) { Take(i, m, n); });
    }
  }

  // Per shape: machine -> tasks reserved.
  [[nodiscard]] const std::vector<std::map<MachineId, int64_t>>& reserved()
      const {
    return reserved_;
  }

 private:
  void Take(size_t i, MachineId m, int64_t n) {
    reserved_[i][m] = n;
    ++in_pass_[i];
  }
  [[nodiscard]] bool Usable(size_t i, MachineId m, int64_t cap) const {
    return in_pass_[i] < cap && !reserved_[i].contains(m);
  }

  const cluster::ClusterState& state_;
  const std::vector<RequestShape>& shapes_;
  const std::vector<const cluster::Machine*> order_;
  std::vector<MachineRoom> rooms_;
  std::vector<std::map<MachineId, int64_t>> reserved_;
  // Machines each shape reserved on in the current pass.
  std::vector<int64_t> in_pass_;
};

// Shape `key`'s tree: one arc into each machine it reserved on (`on`),
// from C_{m,s} for a computer its tasks prefer, else from R_{l,s} for a
// rack they prefer, else from X_s. Adds the tree's node keys to `live`.
absl::Status SyncRoomShapeTree(const RequestShape& shape,
                               const std::set<MachineId>& computers,
                               const std::set<std::string>& pref_racks,
                               const std::map<MachineId, int64_t>& on,
                               const RoomPricing& pricing,
                               const cluster::ClusterState& state,
                               NetworkBuilder& builder,
                               std::set<uint64_t>& live) {
  const std::string& key = shape.key;
  // The arc entering machine m with the n tasks reserved there.
  const auto into_machine = [&](MachineId m, int64_t n) -> DesiredArc {
    const NodeId node = builder.FindMachineNode(m);
    const cluster::Machine* machine = state.FindMachine(m);
    if (!pricing.arc || machine == nullptr) return {node, n, 0, {}};
    return pricing.arc(*machine, node, shape, n);
  };
  const NodeId shape_node = builder.EnsureAggregatorNode(
      NodeKind::kEquivalenceClass, ShapeNodeKey(key));
  live.insert(ShapeNodeKey(key));
  std::map<std::string, std::vector<DesiredArc>> rack_arcs;
  std::map<std::string, int64_t> rack_total;
  std::vector<DesiredArc> shape_arcs;
  for (MachineId m : computers) {
    const uint64_t node_key = ComputerNodeKey(key, m);
    live.insert(node_key);
    const NodeId node =
        builder.EnsureAggregatorNode(NodeKind::kEquivalenceClass, node_key);
    auto n = on.find(m);
    std::vector<DesiredArc> arcs;
    if (n != on.end()) arcs.push_back(into_machine(m, n->second));
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, arcs));
  }
  for (const auto& [m, n] : on) {
    const cluster::Machine* machine = state.FindMachine(m);
    const DesiredArc arc =
        computers.contains(m)
            ? DesiredArc{builder.FindAggregatorNode(NodeKind::kEquivalenceClass,
                                                    ComputerNodeKey(key, m)),
                         n,
                         0,
                         {}}
            : into_machine(m, n);
    if (pref_racks.contains(machine->rack)) {
      rack_arcs[machine->rack].push_back(arc);
      rack_total[machine->rack] += n;
    } else {
      shape_arcs.push_back(arc);
    }
  }
  for (const std::string& rack : pref_racks) {
    const uint64_t node_key = RackNodeKey(key, rack);
    live.insert(node_key);
    const NodeId node =
        builder.EnsureAggregatorNode(NodeKind::kEquivalenceClass, node_key);
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, rack_arcs[rack]));
    if (rack_total[rack] > 0) {
      shape_arcs.push_back({node, rack_total[rack], 0});
    }
  }
  return builder.SetOutArcs(shape_node, shape_arcs);
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
  RoomPreferredPlaces places;
  FindRoomPreferredPlaces(state, racks, computers, pref_racks, places);

  // Every computer a shape's tasks prefer, then machines of the racks
  // they prefer, then, for a shape with too little room where it is
  // preferred, a few machines anywhere (a reservation is exclusive, so
  // reserving anywhere for every shape would spend a full cluster's room
  // on shapes that have better choices).
  RoomReserver reserver(state, shapes);
  reserver.OfferPreferred(places, true, [](size_t) { return INT64_MAX; });
  reserver.OfferPreferred(places, false, [&](size_t i) {
    return std::max(params_.min_rack_machines,
                    params_.rack_machines_per_task * shapes[i].waiting);
  });
  const std::vector<std::map<MachineId, int64_t>>& reserved =
      reserver.reserved();
  std::vector<bool> covered(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    int64_t units = 0;
    for (const auto& [m, n] : reserved[i]) units += n;
    covered[i] = units >= shapes[i].waiting;
  }
  reserver.OfferAny([&](size_t i) {
    return covered[i]
               ? 0
               : std::max(params_.min_shape_machines,
                          params_.shape_machines_per_task * shapes[i].waiting);
  });

  if (pricing_.prepare) pricing_.prepare(state);
  std::set<uint64_t> live;
  for (size_t i = 0; i < shapes.size(); ++i) {
    FLOWSCHED_RETURN_IF_ERROR(
        SyncRoomShapeTree(shapes[i], computers[i], pref_racks[i], reserved[i],
                          pricing_, state, builder, live));
  }
  RemoveAggregatorsExcept(NodeKind::kEquivalenceClass, live, builder);
  had_routes_ = !shapes.empty();
  return absl::OkStatus();
}

}  // namespace flowsched::flow
