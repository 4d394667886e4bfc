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
    const size_t i = index_of.at(*key);
    computers[i].insert(preferences.computers.begin(),
                        preferences.computers.end());
    pref_racks[i].insert(preferences.racks.begin(), preferences.racks.end());
  }

  // The shapes each machine serves first: those preferring it as a
  // computer, then those preferring its rack (on the rack's least-loaded
  // machines with a free slot).
  const auto less_loaded = [&](MachineId a, MachineId b) {
    const cluster::Machine* ma = state.FindMachine(a);
    const cluster::Machine* mb = state.FindMachine(b);
    return std::pair(ma->running.size(), a) < std::pair(mb->running.size(), b);
  };
  absl::flat_hash_map<MachineId, std::vector<size_t>> first;
  for (size_t i = 0; i < shapes.size(); ++i) {
    for (MachineId m : computers[i]) {
      if (state.FindMachine(m) != nullptr) first[m].push_back(i);
    }
  }
  std::map<std::string, std::vector<MachineId>> rack_order;
  for (size_t i = 0; i < shapes.size(); ++i) {
    for (const std::string& rack : pref_racks[i]) {
      auto order = rack_order.find(rack);
      if (order == rack_order.end()) {
        std::vector<MachineId> open;
        auto machines = racks.find(rack);
        if (machines != racks.end()) {
          for (MachineId m : machines->second) {
            const cluster::Machine* machine = state.FindMachine(m);
            if (machine != nullptr && machine->free_slots() > 0) {
              open.push_back(m);
            }
          }
        }
        std::sort(open.begin(), open.end(), less_loaded);
        order = rack_order.emplace(rack, std::move(open)).first;
      }
      const auto take = static_cast<size_t>(
          std::max(params_.min_rack_machines,
                   params_.rack_machines_per_task * shapes[i].waiting));
      for (size_t k = 0; k < order->second.size() && k < take; ++k) {
        const MachineId m = order->second[k];
        if (!computers[i].contains(m)) first[m].push_back(i);
      }
    }
  }

  // Machines least loaded first; each reserves once, for its preferring
  // shapes first, then for any shape short of its quota.
  std::vector<int64_t> quota(shapes.size());
  size_t open_shapes = shapes.size();
  for (size_t i = 0; i < shapes.size(); ++i) {
    quota[i] = std::max(params_.min_shape_machines,
                        params_.shape_machines_per_task * shapes[i].waiting);
  }
  std::vector<std::vector<const cluster::Machine*>> by_running;
  for (const auto& [id, machine] : state.machines()) {
    if (machine.free_slots() == 0) continue;
    const size_t running = machine.running.size();
    if (by_running.size() <= running) by_running.resize(running + 1);
    by_running[running].push_back(&machine);
  }
  std::vector<std::vector<std::pair<MachineId, int64_t>>> reserved(
      shapes.size());
  static const std::vector<size_t> kNone;
  for (const auto& machines : by_running) {
    for (const cluster::Machine* machine : machines) {
      auto preferring = first.find(machine->id);
      const std::vector<size_t>& own =
          preferring == first.end() ? kNone : preferring->second;
      if (open_shapes == 0 && own.empty()) continue;
      size_t next_own = 0;
      size_t j = 0;
      const size_t rotation = static_cast<size_t>(machine->id.value());
      ReserveMachineInOrder(
          *machine, state, shapes,
          [&]() -> std::optional<size_t> {
            if (next_own < own.size()) return own[next_own++];
            while (open_shapes > 0 && j < shapes.size()) {
              const size_t i = (rotation + j++) % shapes.size();
              if (quota[i] > 0 &&
                  std::find(own.begin(), own.end(), i) == own.end()) {
                return i;
              }
            }
            return std::nullopt;
          },
          [&](size_t i, int64_t n) {
            reserved[i].emplace_back(machine->id, n);
            if (std::find(own.begin(), own.end(), i) == own.end() &&
                --quota[i] == 0) {
              --open_shapes;
            }
          });
    }
  }

  // Each shape's tree: one arc into each machine it reserved on.
  std::set<uint64_t> live;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string& key = shapes[i].key;
    const NodeId shape_node = builder.EnsureAggregatorNode(
        NodeKind::kEquivalenceClass, ShapeNodeKey(key));
    live.insert(ShapeNodeKey(key));
    std::map<MachineId, int64_t> on(reserved[i].begin(), reserved[i].end());
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
