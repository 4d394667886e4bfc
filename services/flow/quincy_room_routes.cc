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

// The machines not yet full that a shape looks at for more room once
// every shape has its own: a bound on the walk, which would otherwise
// pass every machine too full for most shapes once per shape.
constexpr size_t kChoiceScan = 64;

// A place a shape's tasks prefer: a computer (rack null) or the machines
// of a rack, at the lowest cost of any of its tasks' arcs there.
struct PreferredPlace {
  int64_t cost = 0;
  MachineId computer;
  const std::string* rack = nullptr;
};

// What a shape's waiting tasks prefer: the computers and racks (ordered, so
// the tree is built deterministically), the places cheapest first (a
// computer before a rack at the same cost), and the most any of its tasks
// saves at its cheapest place against reading from anywhere (alpha).
struct ShapePreferences {
  std::set<MachineId> computers;
  std::set<std::string> racks;
  std::vector<PreferredPlace> places;
  int64_t saving = 0;
};

// Reserves the machines' free room among the shapes by need: a shape
// reserves on a machine at most once and no more than it still lacks (its
// waiting tasks less what earlier machines hold for it). Reservations are
// exclusive, so a shape holding more than it needs would keep others out of
// room they have nowhere else.
class RoomReserver {
 public:
  // `racks`: the machines of each rack.
  RoomReserver(const cluster::ClusterState& state,
               const std::vector<RequestShape>& shapes,
               const std::map<std::string, std::vector<MachineId>>& racks)
      : state_(state),
        shapes_(shapes),
        order_(MachinesLeastLoadedFirst(state)),
        reserved_(shapes.size()),
        units_(shapes.size(), 0) {
    rooms_.reserve(order_.size());
    for (const cluster::Machine* machine : order_) {
      position_.emplace(machine->id, rooms_.size());
      rooms_.emplace_back(*machine);
    }
    for (const auto& [rack, machines] : racks) {
      std::vector<size_t>& positions = rack_positions_[rack];
      for (const MachineId m : machines) {
        auto k = position_.find(m);
        if (k != position_.end()) positions.push_back(k->second);
      }
      std::sort(positions.begin(), positions.end());
    }
  }

  // Shapes in `shape_order`, each in turn: room on its places, cheapest
  // first (a rack's machines least loaded first).
  void OfferPreferred(const std::vector<ShapePreferences>& preferences,
                      const std::vector<size_t>& shape_order) {
    for (const size_t i : shape_order) {
      for (const PreferredPlace& place : preferences[i].places) {
        if (Lacking(i) <= 0) break;
        if (place.rack == nullptr) {
          auto k = position_.find(place.computer);
          if (k != position_.end()) OfferOne(i, k->second, /*by_need=*/true);
          continue;
        }
        auto positions = rack_positions_.find(*place.rack);
        if (positions == rack_positions_.end()) continue;
        for (const size_t k : positions->second) {
          if (Lacking(i) <= 0) break;
          OfferOne(i, k, /*by_need=*/true);
        }
      }
    }
  }

  // Anywhere, each shape in turn while `more(i)` holds: machines least
  // loaded first, at most `scan` of those not yet full (by need, or each
  // up to its waiting tasks).
  template <typename More>
  void OfferAnywhere(const More& more, bool by_need, size_t scan) {
    size_t first_open = 0;  // machines before it are full for this pass
    for (size_t i = 0; i < shapes_.size(); ++i) {
      while (first_open < rooms_.size() && rooms_[first_open].full()) {
        ++first_open;
      }
      const size_t end =
          first_open + std::min(scan, rooms_.size() - first_open);
      for (size_t k = first_open; k < end && more(i); ++k) {
        OfferOne(i, k, by_need);
      }
    }
  }

  // Shape i's waiting tasks that no reservation holds room for yet.
  [[nodiscard]] int64_t Lacking(size_t i) const {
    return shapes_[i].waiting - units_[i];
  }
  // The machines shape i reserved on.
  [[nodiscard]] int64_t Machines(size_t i) const {
    return static_cast<int64_t>(reserved_[i].size());
  }

  // Per shape: machine -> tasks reserved.
  [[nodiscard]] const std::vector<std::map<MachineId, int64_t>>& reserved()
      const {
    return reserved_;
  }

 private:
  // A pass by need reserves no more than a shape lacks.
  [[nodiscard]] std::function<int64_t(size_t)> Most(bool by_need) const {
    if (!by_need) return nullptr;
    return [this](size_t i) { return Lacking(i); };
  }
  void Take(size_t i, MachineId m, int64_t n) {
    reserved_[i][m] = n;
    units_[i] += n;
  }
  // Offers the room of the machine at position k to shape i alone.
  void OfferOne(size_t i, size_t k, bool by_need) {
    MachineRoom& room = rooms_[k];
    const MachineId m = order_[k]->id;
    if (room.full() || !room.MayFit(shapes_[i]) || reserved_[i].contains(m)) {
      return;
    }
    bool offered = false;
    room.Offer(
        state_, shapes_,
        [&]() -> std::optional<size_t> {
          if (offered) return std::nullopt;
          offered = true;
          return i;
        },
        [&](size_t j, int64_t n) { Take(j, m, n); }, Most(by_need));
  }

  const cluster::ClusterState& state_;
  const std::vector<RequestShape>& shapes_;
  const std::vector<const cluster::Machine*> order_;
  std::vector<MachineRoom> rooms_;
  absl::flat_hash_map<MachineId, size_t> position_;  // in order_
  std::map<std::string, std::vector<size_t>> rack_positions_;
  std::vector<std::map<MachineId, int64_t>> reserved_;
  std::vector<int64_t> units_;  // tasks reserved per shape
};

// Each shape's preferences, from its waiting tasks' (each place at the
// lowest cost of any of them), and the shapes in the order they reserve:
// the largest saving first, so that a rack more work prefers than it holds
// goes to the work that loses most elsewhere.
absl::Status GatherShapePreferences(
    const ShapeIndex& index, const std::vector<RequestShape>& shapes,
    const absl::flat_hash_map<TaskId, DataLocalityTerm::TaskPrices>& tasks,
    std::vector<ShapePreferences>& preferences,
    std::vector<size_t>& shape_order) {
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < shapes.size(); ++i) index_of[shapes[i].key] = i;
  preferences.assign(shapes.size(), {});
  std::vector<std::map<MachineId, int64_t>> computer_cost(shapes.size());
  std::vector<std::map<std::string, int64_t>> rack_cost(shapes.size());
  const auto lower = [](auto& costs, const auto& key, int64_t cost) {
    auto [it, fresh] = costs.emplace(key, cost);
    if (!fresh) it->second = std::min(it->second, cost);
  };
  for (const auto& [id, task] : tasks) {
    const std::string* key = index.KeyOf(id);
    if (key == nullptr) continue;
    auto found = index_of.find(*key);
    if (found == index_of.end()) {
      return absl::InternalError(
          absl::StrCat("waiting task ", id.value(), " has no request shape"));
    }
    const size_t i = found->second;
    int64_t best = task.alpha;
    for (size_t r = 0; r < task.computers.size(); ++r) {
      lower(computer_cost[i], task.computers[r], task.computer_costs[r]);
      best = std::min(best, task.computer_costs[r]);
    }
    for (size_t r = 0; r < task.racks.size(); ++r) {
      lower(rack_cost[i], task.racks[r], task.rack_costs[r]);
      best = std::min(best, task.rack_costs[r]);
    }
    preferences[i].saving = std::max(preferences[i].saving, task.alpha - best);
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    ShapePreferences& shape = preferences[i];
    for (const auto& [m, cost] : computer_cost[i]) {
      shape.computers.insert(m);
      shape.places.push_back({cost, m, nullptr});
    }
    for (const auto& [rack, cost] : rack_cost[i]) {
      // A set's elements stay where they are: the place points at it.
      shape.places.push_back(
          {cost, MachineId(), &*shape.racks.insert(rack).first});
    }
    // Stable: computers by id, then racks by name, at equal cost.
    std::stable_sort(shape.places.begin(), shape.places.end(),
                     [](const PreferredPlace& a, const PreferredPlace& b) {
                       return a.cost < b.cost;
                     });
  }
  shape_order.resize(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) shape_order[i] = i;
  std::stable_sort(shape_order.begin(), shape_order.end(),
                   [&](size_t a, size_t b) {
                     return preferences[a].saving > preferences[b].saving;
                   });
  return absl::OkStatus();
}

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
    const cluster::Task& task, const DataLocalityTerm::TaskPrices& prices,
    NetworkBuilder& builder) {
  const std::string* key = shapes_.KeyOf(task.spec.id);
  if (key == nullptr) {
    return absl::InternalError(absl::StrCat("task ", task.spec.id.value(),
                                            " is routed but not tracked"));
  }
  had_routes_ = true;
  Targets targets;
  targets.shape = builder.EnsureAggregatorNode(NodeKind::kEquivalenceClass,
                                               ShapeNodeKey(*key));
  for (const std::string& rack : prices.racks) {
    targets.racks.push_back(builder.EnsureAggregatorNode(
        NodeKind::kEquivalenceClass, RackNodeKey(*key, rack)));
  }
  for (MachineId machine : prices.computers) {
    targets.computers.push_back(builder.EnsureAggregatorNode(
        NodeKind::kEquivalenceClass, ComputerNodeKey(*key, machine)));
  }
  preferences_[task.spec.id] = prices;
  return targets;
}

absl::Status RoomRoutes::SyncArcs(
    const cluster::ClusterState& state,
    const std::map<std::string, std::vector<MachineId>>& racks,
    NetworkBuilder& builder) {
  if (!had_routes_ && shapes_.size() == 0) return absl::OkStatus();
  const std::vector<RequestShape> shapes = shapes_.Shapes(state);
  std::vector<ShapePreferences> preferences;
  std::vector<size_t> shape_order;
  FLOWSCHED_RETURN_IF_ERROR(GatherShapePreferences(
      shapes_, shapes, preferences_, preferences, shape_order));

  // By need where the shapes' tasks prefer, then anywhere for the shapes
  // still short; then, from the room left, a few machines anywhere for
  // each shape, so that the solver (and a profile's class terms) can
  // choose.
  RoomReserver reserver(state, shapes, racks);
  reserver.OfferPreferred(preferences, shape_order);
  reserver.OfferAnywhere([&](size_t i) { return reserver.Lacking(i) > 0; },
                         /*by_need=*/true, SIZE_MAX);
  reserver.OfferAnywhere(
      [&](size_t i) {
        return reserver.Machines(i) <
               std::max(params_.min_shape_machines,
                        params_.shape_machines_per_task * shapes[i].waiting);
      },
      /*by_need=*/false, kChoiceScan);
  const std::vector<std::map<MachineId, int64_t>>& reserved =
      reserver.reserved();
  if (pricing_.prepare) pricing_.prepare(state);
  std::set<uint64_t> live;
  for (size_t i = 0; i < shapes.size(); ++i) {
    FLOWSCHED_RETURN_IF_ERROR(SyncRoomShapeTree(
        shapes[i], preferences[i].computers, preferences[i].racks, reserved[i],
        pricing_, state, builder, live));
  }
  RemoveAggregatorsExcept(NodeKind::kEquivalenceClass, live, builder);
  had_routes_ = !shapes.empty();
  return absl::OkStatus();
}

}  // namespace flowsched::flow
