#include "services/flow/room_pool.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "services/cluster/resource_fit.h"
#include "services/common/status_macros.h"
#include "services/flow/slot_pool.h"

namespace flowsched::flow {

bool RoomPool::Takes(const RequestShape& shape) {
  return AsksPlainRoom(shape.ask) && shape.different_machines_job.value() == 0;
}

bool RoomPool::AsksPlainRoom(const cluster::TaskSpec& spec) {
  const cluster::Resources& r = spec.request;
  return (r.cpu_millis > 0 || r.memory_bytes > 0 ||
          r.network_bytes_per_sec > 0) &&
         r.scalars.empty() && spec.accelerator.empty() &&
         spec.required_labels.empty();
}

void RoomPool::Count(const Ask& ask, int delta) {
  const auto add = [delta](absl::btree_map<int64_t, int64_t>& counts,
                           int64_t value) {
    if (value <= 0) return;
    int64_t& count = counts[value];
    count += delta;
    if (count <= 0) counts.erase(value);
  };
  add(running_cpu_, ask.cpu_millis);
  add(running_memory_, ask.memory_bytes);
  add(running_network_, ask.network_bytes_per_sec);
}

void RoomPool::TrackRunning(const cluster::ChangeSet& changes,
                            const cluster::ClusterState& state, bool all) {
  const auto track = [&](TaskId id, const cluster::Task* task) {
    if (auto it = running_.find(id); it != running_.end()) {
      Count(it->second, -1);
      running_.erase(it);
    }
    if (task == nullptr || !task->running() || !AsksPlainRoom(task->spec)) {
      return;
    }
    const cluster::Resources& r = task->spec.request;
    const Ask ask{r.cpu_millis, r.memory_bytes, r.network_bytes_per_sec};
    running_.emplace(id, ask);
    Count(ask, 1);
  };
  if (all) {
    running_.clear();
    running_cpu_.clear();
    running_memory_.clear();
    running_network_.clear();
    for (const auto& [id, task] : state.tasks()) track(id, &task);
    return;
  }
  for (TaskId id : changes.tasks) track(id, state.FindTask(id));
}

bool RoomPool::SetBound(const std::vector<RequestShape>& shapes) {
  const auto largest = [](const absl::btree_map<int64_t, int64_t>& counts) {
    return counts.empty() ? int64_t{0} : counts.rbegin()->first;
  };
  bound_ = cluster::Resources{};
  bound_.cpu_millis = largest(running_cpu_);
  bound_.memory_bytes = largest(running_memory_);
  bound_.network_bytes_per_sec = largest(running_network_);
  takes_any_ = false;
  for (const RequestShape& shape : shapes) {
    if (!Takes(shape)) continue;
    takes_any_ = true;
    const cluster::Resources& r = shape.ask.request;
    bound_.cpu_millis = std::max(bound_.cpu_millis, r.cpu_millis);
    bound_.memory_bytes = std::max(bound_.memory_bytes, r.memory_bytes);
    bound_.network_bytes_per_sec =
        std::max(bound_.network_bytes_per_sec, r.network_bytes_per_sec);
  }
  bounded_ = takes_any_ || !running_.empty();
  return takes_any_;
}

void RoomPool::NoteChanged(const cluster::ChangeSet& changes) {
  for (MachineId id : changes.machines) {
    set_.erase(id);
    noted_.insert(id);
  }
}

bool RoomPool::Holds(const cluster::Machine& machine) const {
  if (!bounded_) return false;
  int64_t free = machine.free_slots();
  if (limits_.max_tasks > 0) {
    free = std::min(
        free, limits_.max_tasks - static_cast<int64_t>(machine.running.size()));
  }
  if (free <= 0) return false;
  if (!limits_.network_by_use) {
    return cluster::ResourceFitCount(machine, bound_, free) == free;
  }
  cluster::Machine room;
  room.capacity = machine.capacity;
  room.allocated = machine.allocated;
  room.allocated.network_bytes_per_sec = NetworkTaken(machine, limits_);
  return cluster::ResourceFitCount(room, bound_, free) == free;
}

NodeId RoomPool::EnsureNode(NetworkBuilder& builder) const {
  return builder.EnsureAggregatorNode(NodeKind::kEquivalenceClass,
                                      NetworkBuilder::StableKey(kNodeKey));
}

absl::Status RoomPool::SetArc(const cluster::ClusterState& state, MachineId id,
                              const absl::flat_hash_set<MachineId>& closed,
                              NodeId pool, int64_t per_task_cost,
                              NetworkBuilder& builder) {
  const cluster::Machine* machine = state.FindMachine(id);
  if (machine == nullptr) {
    set_.erase(id);  // its node and arcs went with it
    return absl::OkStatus();
  }
  const NodeId node = builder.FindMachineNode(id);
  if (node == kNoNode) {
    return absl::InternalError(absl::StrCat(
        "machine ", id.value(), " has no node for the room pool's arc"));
  }
  const SetFrom now{.pool = pool,
                    .machine = node,
                    .open = Holds(*machine) && !closed.contains(id),
                    .running = static_cast<uint32_t>(machine->running.size()),
                    .slots = machine->task_slots};
  auto [last, added] = set_.try_emplace(id);
  if (!added && last->second == now) return absl::OkStatus();
  last->second = now;
  return SetSlotPoolArc(*machine, pool, node, per_task_cost, limits_.max_tasks,
                        builder.network(), now.open);
}

absl::Status RoomPool::SetArcs(const cluster::ClusterState& state,
                               const absl::flat_hash_set<MachineId>& closed,
                               int64_t per_task_cost, NetworkBuilder& builder) {
  const PassInputs inputs{.pool = EnsureNode(builder),
                          .bounded = bounded_,
                          .bound = bounded_ ? bound_ : cluster::Resources{},
                          .per_task_cost = per_task_cost};
  const bool every = last_pass_ != inputs;
  last_pass_ = inputs;
  absl::Status status = absl::OkStatus();
  if (every) {
    for (const auto& [id, machine] : state.machines()) {
      status = SetArc(state, id, closed, inputs.pool, per_task_cost, builder);
      if (!status.ok()) break;
    }
    if (status.ok() && set_.size() > state.machines().size()) {
      absl::erase_if(set_, [&](const auto& entry) {
        return state.FindMachine(entry.first) == nullptr;
      });
    }
  } else {
    // In id order, as a full pass goes: the arcs' order in the network is
    // part of a deterministic round.
    std::vector<MachineId> visit(noted_.begin(), noted_.end());
    visit.insert(visit.end(), closed.begin(), closed.end());
    visit.insert(visit.end(), last_closed_.begin(), last_closed_.end());
    std::sort(visit.begin(), visit.end());
    visit.erase(std::unique(visit.begin(), visit.end()), visit.end());
    for (MachineId id : visit) {
      status = SetArc(state, id, closed, inputs.pool, per_task_cost, builder);
      if (!status.ok()) break;
    }
  }
  if (!status.ok()) {
    last_pass_.reset();  // a failed pass is done again in full
    return status;
  }
  noted_.clear();
  last_closed_ = closed;
  return absl::OkStatus();
}

}  // namespace flowsched::flow
