#include "services/flow/load_spreading_policy.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_walk.h"
#include "services/flow/request_shapes.h"

namespace flowsched::flow {

bool LoadSpreadingPolicy::AsksForRoom(const cluster::Task& task) {
  const cluster::Resources& r = task.spec.request;
  return r.cpu_millis > 0 || r.memory_bytes > 0 ||
         r.network_bytes_per_sec > 0 || !r.scalars.empty() ||
         !task.spec.accelerator.empty() || !task.spec.required_labels.empty();
}

absl::Status LoadSpreadingPolicy::SyncShapeArcs(
    const cluster::ClusterState& state,
    const std::vector<RequestShape>& shapes,
    const std::map<std::string, NodeId>& class_nodes,
    NetworkBuilder& builder) const {
  std::map<std::string, std::vector<DesiredArc>> class_arcs;
  size_t machine_index = 0;
  for (const auto& [machine_id, machine] : state.machines()) {
    const NodeId machine_node = builder.FindMachineNode(machine_id);
    const auto running = static_cast<int64_t>(machine.running.size());
    ReserveMachine(
        machine, state, shapes, machine_index++, [&](size_t i, int64_t n) {
          // The k-th new task on the machine costs what X's k-th free
          // slot piece costs: per_task_cost * (running + k - 1).
          const int64_t pieces =
              std::min<int64_t>(n, static_cast<int64_t>(kMaxArcSegments));
          DesiredArc arc{machine_node, 1, params_.per_task_cost * running,
                         {}};
          for (int64_t k = 2; k <= pieces; ++k) {
            arc.extra_segments.push_back(
                {k == pieces ? n - k + 1 : 1,
                 params_.per_task_cost * (running + k - 1)});
          }
          class_arcs[shapes[i].key].push_back(std::move(arc));
        });
  }
  std::set<uint64_t> live;
  for (const auto& [key, node] : class_nodes) {
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, class_arcs[key]));
    live.insert(NetworkBuilder::StableKey(key));
  }
  RemoveAggregatorsExcept(NodeKind::kEquivalenceClass, live, builder);
  return absl::OkStatus();
}

absl::Status LoadSpreadingPolicy::Sync(const cluster::ChangeSet& changes,
                                       const cluster::ClusterState& state,
                                       const SyncContext& /*context*/,
                                       NetworkBuilder& builder) {
  FlowNetwork& network = builder.network();
  const NodeId sink = builder.EnsureSink();
  const NodeId aggregator = builder.EnsureClusterAggregator();

  // Jobs and machines first: task arcs point at their nodes.
  FLOWSCHED_RETURN_IF_ERROR(SyncJobsToSink(changes, state, builder));
  for (MachineId machine_id : changes.machines) {
    const cluster::Machine* machine = state.FindMachine(machine_id);
    if (machine == nullptr) {
      builder.RemoveMachineNode(machine_id);
      continue;
    }
    const NodeId node = builder.EnsureMachineNode(machine_id);
    const auto slots = static_cast<int64_t>(machine->task_slots);
    const auto running = static_cast<int64_t>(machine->running.size());
    // One fixed-cost piece per slot, open iff the slot is free (see the
    // header): the same convex function as repricing free-slot pieces by
    // the running count, but a start or finish changes one piece's
    // capacity, not every piece's cost. Closed pieces below `running` keep
    // every piece at the same position, so the change is one piece.
    const auto pieces = static_cast<size_t>(
        std::min<int64_t>(slots, static_cast<int64_t>(kMaxArcSegments)));
    std::vector<ArcSegment> slot_pieces(std::max<size_t>(pieces, 1));
    for (size_t s = 0; s < pieces; ++s) {
      const auto slot = static_cast<int64_t>(s);
      const int64_t covered = s + 1 == pieces ? slots - slot : 1;
      slot_pieces[s] = {std::clamp<int64_t>(slot + covered - running, 0,
                                            covered),
                        params_.per_task_cost * slot};
    }
    FLOWSCHED_RETURN_IF_ERROR(network.SetArc(
        aggregator, node, slot_pieces[0].capacity, slot_pieces[0].cost,
        std::span<const ArcSegment>(slot_pieces).subspan(1)));
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, {{sink, slots, 0}}));
  }
  // Waiting tasks that ask for resources, devices or labels go through
  // their request shape's class, whose arcs carry what each machine has
  // reserved for it (request_shapes.h); the others, through X.
  const std::vector<RequestShape> shapes = WaitingShapes(state, AsksForRoom);
  std::map<std::string, NodeId> class_nodes;
  for (const RequestShape& shape : shapes) {
    class_nodes[shape.key] = builder.EnsureAggregatorNode(
        NodeKind::kEquivalenceClass, NetworkBuilder::StableKey(shape.key));
  }
  FLOWSCHED_RETURN_IF_ERROR(SyncChangedTasks(
      changes, state, builder,
      [&](const cluster::Task& task, NodeId node, const TaskEnds& ends) {
        std::vector<DesiredArc> arcs;
        if (task.running()) {
          arcs.push_back({ends.job, 1, params_.preemption_cost});
          arcs.push_back({ends.machine, 1, 0});
        } else {
          arcs.push_back({ends.job, 1, params_.unscheduled_cost});
          arcs.push_back(
              {AsksForRoom(task) ? class_nodes.at(ShapeKey(task, state))
                                 : aggregator,
               1, 0});
        }
        return builder.SetOutArcs(node, arcs);
      }));
  FLOWSCHED_RETURN_IF_ERROR(SyncShapeArcs(state, shapes, class_nodes, builder));
  return DrainTasksAtSink(builder);
}

}  // namespace flowsched::flow
