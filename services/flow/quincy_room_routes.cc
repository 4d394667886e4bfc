#include "services/flow/quincy_room_routes.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"
#include "services/flow/constraints.h"
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

// The machines a shape looks at for more room in the pass that offers it
// choice, from the least loaded one that may fit any shape still to come.
constexpr size_t kChoiceScan = 64;

SmallestAsk AskOf(const RequestShape& shape) {
  return {shape.ask.request.cpu_millis, shape.ask.request.memory_bytes};
}

// A place a shape's tasks prefer: a computer (rack null) or the machines
// of a rack, at the lowest cost of any of its tasks' arcs there. For a
// shape of several waiting tasks, which of them (ShapePreferences' order)
// list it.
struct PreferredPlace {
  int64_t cost = 0;
  MachineId computer;
  const std::string* rack = nullptr;
  std::vector<uint32_t> tasks;
};

// What a shape's waiting tasks prefer: the computers and racks (ordered, so
// the tree is built deterministically), the places cheapest first (a
// computer before a rack at the same cost), the most any of its tasks
// saves at its cheapest place against reading from anywhere (alpha), how
// many waiting tasks it has and when the longest waiting of them began to
// wait. Not copyable: places point into `racks`.
struct ShapePreferences {
  ShapePreferences() = default;
  ShapePreferences(const ShapePreferences&) = delete;
  ShapePreferences& operator=(const ShapePreferences&) = delete;
  ShapePreferences(ShapePreferences&&) = default;
  ShapePreferences& operator=(ShapePreferences&&) = default;

  std::set<MachineId> computers;
  std::set<std::string> racks;
  std::vector<PreferredPlace> places;
  int64_t saving = 0;
  uint32_t tasks = 0;
  int64_t waiting_since = std::numeric_limits<int64_t>::max();
};

// Reserves the machines' free room among the shapes. A shape reserves on a
// machine at most once. In the passes by need it reserves no more than it
// still lacks (its waiting tasks less what earlier machines hold for it),
// and at a preferred place no more than the tasks that list the place and
// have no room yet: reservations are exclusive, so a shape holding more
// than its tasks can use would keep others out of room they have nowhere
// else.
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

  // By need, shapes in `shape_order`, each in turn: room at its places,
  // cheapest first (a rack's machines least loaded first).
  void OfferPreferred(const std::vector<ShapePreferences>& preferences,
                      const std::vector<size_t>& shape_order) {
    std::vector<bool> covered;  // of the shape's tasks
    std::vector<uint32_t> open;
    for (const size_t i : shape_order) {
      const ShapePreferences& shape = preferences[i];
      covered.assign(shape.tasks > 1 ? shape.tasks : 0, false);
      for (const PreferredPlace& place : shape.places) {
        if (Lacking(i) <= 0) break;
        // The tasks this place may still take: all that the shape lacks
        // for a shape of one task, else those listing it without room.
        int64_t may_take = Lacking(i);
        open.clear();
        if (!covered.empty()) {
          for (const uint32_t t : place.tasks) {
            if (!covered[t]) open.push_back(t);
          }
          may_take = std::min<int64_t>(may_take, std::ssize(open));
        }
        int64_t took = 0;
        if (place.rack == nullptr) {
          auto k = position_.find(place.computer);
          if (k != position_.end()) took = OfferOne(i, k->second, may_take);
        } else if (auto positions = rack_positions_.find(*place.rack);
                   positions != rack_positions_.end()) {
          for (const size_t k : positions->second) {
            if (took >= may_take) break;
            took += OfferOne(i, k, may_take - took);
          }
        }
        for (int64_t t = 0; t < took && t < std::ssize(open); ++t) {
          covered[open[static_cast<size_t>(t)]] = true;
        }
      }
    }
  }

  // Anywhere, shapes in `shape_order`, each while `more(i)` holds: machines
  // least loaded first, by need (`by_need`) or each up to the shape's
  // waiting tasks; with a `scan`, no more than that many machines.
  template <typename More>
  void OfferAnywhere(const std::vector<size_t>& shape_order, const More& more,
                     bool by_need, std::optional<size_t> scan) {
    const size_t n = rooms_.size();
    // The least CPU and the least memory asked by the shapes from the j-th
    // on: a room with less free CPU or less free memory fits none of them,
    // and rooms only shrink in a pass, so the walk's first machine only
    // moves on.
    std::vector<SmallestAsk> rest(shape_order.size() + 1,
                                  {std::numeric_limits<int64_t>::max(),
                                   std::numeric_limits<int64_t>::max()});
    for (size_t j = shape_order.size(); j-- > 0;) {
      const SmallestAsk ask = AskOf(shapes_[shape_order[j]]);
      rest[j] = {std::min(rest[j + 1].cpu_millis, ask.cpu_millis),
                 std::min(rest[j + 1].memory_bytes, ask.memory_bytes)};
    }
    size_t first = 0;
    for (size_t j = 0; j < shape_order.size(); ++j) {
      const size_t i = shape_order[j];
      if (!more(i)) continue;
      while (first < n &&
             (rooms_[first].full() || !rooms_[first].MayFit(rest[j]))) {
        ++first;
      }
      if (first == n) return;
      const size_t end = first + std::min(scan.value_or(n), n - first);
      for (size_t k = first; k < end && more(i); ++k) {
        OfferOne(i, k, by_need ? std::optional(Lacking(i)) : std::nullopt);
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
  // Offers the room of the machine at position k to shape i alone, at
  // most `most` tasks (else up to its waiting tasks); the tasks reserved.
  int64_t OfferOne(size_t i, size_t k, std::optional<int64_t> most) {
    MachineRoom& room = rooms_[k];
    const cluster::Machine& machine = *order_[k];
    const RequestShape& shape = shapes_[i];
    if (room.full() || !room.MayFit(AskOf(shape)) ||
        !LabelsMatch(machine.labels, shape.ask.required_labels) ||
        reserved_[i].contains(machine.id)) {
      return 0;
    }
    bool offered = false;
    int64_t took = 0;
    room.Offer(
        state_, shapes_,
        [&]() -> std::optional<size_t> {
          if (offered) return std::nullopt;
          offered = true;
          return i;
        },
        [&](size_t j, int64_t n) {
          reserved_[j][machine.id] = n;
          units_[j] += n;
          took = n;
        },
        most.has_value() ? std::function<int64_t(size_t)>(
                               [bound = *most](size_t) { return bound; })
                         : nullptr);
    return took;
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
// lowest cost of any of them; the tasks in id order), and the shapes in
// the order they reserve where they prefer: the largest saving first, so
// that a rack more work prefers than it holds goes to the work that loses
// most elsewhere, then the longest waiting.
absl::Status GatherShapePreferences(
    const ShapeIndex& index, const std::vector<RequestShape>& shapes,
    const absl::flat_hash_map<TaskId, DataLocalityTerm::TaskPrices>& prices,
    const cluster::ClusterState& state,
    std::vector<ShapePreferences>& preferences,
    std::vector<size_t>& shape_order) {
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < shapes.size(); ++i) index_of[shapes[i].key] = i;
  std::vector<std::vector<TaskId>> members(shapes.size());
  for (const auto& [id, unused] : prices) {
    const std::string* key = index.KeyOf(id);
    if (key == nullptr) continue;
    auto found = index_of.find(*key);
    if (found == index_of.end()) {
      return absl::InternalError(
          absl::StrCat("waiting task ", id.value(), " has no request shape"));
    }
    members[found->second].push_back(id);
  }
  preferences.clear();
  preferences.resize(shapes.size());
  const auto lower = [](auto& places, const auto& key, int64_t cost,
                        uint32_t task) {
    auto [it, fresh] = places.try_emplace(key, cost, std::vector<uint32_t>{});
    it->second.first = std::min(it->second.first, cost);
    it->second.second.push_back(task);
  };
  std::map<MachineId, std::pair<int64_t, std::vector<uint32_t>>> computers;
  std::map<std::string, std::pair<int64_t, std::vector<uint32_t>>> racks;
  for (size_t i = 0; i < shapes.size(); ++i) {
    ShapePreferences& shape = preferences[i];
    std::sort(members[i].begin(), members[i].end());
    shape.tasks = static_cast<uint32_t>(members[i].size());
    computers.clear();
    racks.clear();
    for (uint32_t t = 0; t < shape.tasks; ++t) {
      const TaskId id = members[i][t];
      const DataLocalityTerm::TaskPrices& task = prices.at(id);
      int64_t best = task.alpha;
      for (size_t r = 0; r < task.computers.size(); ++r) {
        lower(computers, task.computers[r], task.computer_costs[r], t);
        best = std::min(best, task.computer_costs[r]);
      }
      for (size_t r = 0; r < task.racks.size(); ++r) {
        lower(racks, task.racks[r], task.rack_costs[r], t);
        best = std::min(best, task.rack_costs[r]);
      }
      shape.saving = std::max(shape.saving, task.alpha - best);
      if (const cluster::Task* waiting = state.FindTask(id)) {
        shape.waiting_since =
            std::min(shape.waiting_since, waiting->wait_start_us);
      }
    }
    // A shape of one task needs no list of who prefers a place.
    const auto listing = [&](std::vector<uint32_t>& tasks) {
      return shape.tasks > 1 ? std::move(tasks) : std::vector<uint32_t>{};
    };
    for (auto& [m, place] : computers) {
      shape.computers.insert(m);
      shape.places.push_back({place.first, m, nullptr, listing(place.second)});
    }
    for (auto& [rack, place] : racks) {
      // A set's elements stay where they are: the place points at it.
      shape.places.push_back({place.first, MachineId(),
                              &*shape.racks.insert(rack).first,
                              listing(place.second)});
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
                     const ShapePreferences& x = preferences[a];
                     const ShapePreferences& y = preferences[b];
                     if (x.saving != y.saving) return x.saving > y.saving;
                     return x.waiting_since < y.waiting_since;
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
      shapes_, shapes, preferences_, state, preferences, shape_order));

  // By need where the shapes' tasks prefer, then anywhere for the shapes
  // still short (the longest waiting first); then, from the room left, a
  // few machines anywhere for each shape, so that the solver (and a
  // profile's class terms) can choose.
  RoomReserver reserver(state, shapes, racks);
  reserver.OfferPreferred(preferences, shape_order);
  std::vector<size_t> by_wait(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) by_wait[i] = i;
  std::stable_sort(by_wait.begin(), by_wait.end(), [&](size_t a, size_t b) {
    return preferences[a].waiting_since < preferences[b].waiting_since;
  });
  reserver.OfferAnywhere(
      by_wait, [&](size_t i) { return reserver.Lacking(i) > 0; },
      /*by_need=*/true, std::nullopt);
  reserver.OfferAnywhere(
      by_wait,
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
