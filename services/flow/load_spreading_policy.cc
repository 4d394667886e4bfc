#include "services/flow/load_spreading_policy.h"

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_walk.h"
#include "services/flow/request_shapes.h"

namespace flowsched::flow {

absl::Status LoadSpreadingPolicy::SyncShapeArcs(
    const cluster::ClusterState& state, const std::vector<RequestShape>& shapes,
    const std::map<std::string, NodeId>& class_nodes, int64_t now_us,
    NetworkBuilder& builder) {
  // A shape's class gets arcs to its cheapest machines with room only:
  // enough for its waiting tasks several times over. Arcs to every machine
  // would be rebuilt each round (a new shape per arrival at 12,500
  // machines: thousands of arcs in every delta) for choices the solver
  // would not take, since costs grow with the running count. So machines
  // are visited least loaded first, and a shape stops reserving once it
  // has its share of machines; the visit stops when every shape has.
  StarvingFirst starving(shapes, now_us, params_.gang_first_after_s);
  starving_ = starving.Keys(shapes);
  std::map<std::string, std::vector<DesiredArc>> class_arcs;
  // The k-th new task on a machine costs what X's k-th free slot piece
  // costs: per_task_cost * (running + k - 1).
  const auto add_arc = [&](const cluster::Machine& machine, size_t i,
                           int64_t n) {
    const auto running = static_cast<int64_t>(machine.running.size());
    const int64_t pieces =
        std::min<int64_t>(n, static_cast<int64_t>(kMaxArcSegments));
    DesiredArc arc{builder.FindMachineNode(machine.id),
                   1,
                   params_.per_task_cost * running,
                   {}};
    for (int64_t k = 2; k <= pieces; ++k) {
      arc.extra_segments.push_back({k == pieces ? n - k + 1 : 1,
                                    params_.per_task_cost * (running + k - 1)});
    }
    class_arcs[shapes[i].key].push_back(std::move(arc));
  };
  ReserveLeastLoaded(state, shapes,
                     {.per_task = params_.shape_machines_per_task,
                      .min_machines = params_.min_shape_machines},
                     /*fullest_first=*/false, /*max_tasks=*/0, starving,
                     add_arc);
  return SetShapeArcs(class_nodes, class_arcs, builder);
}

absl::Status LoadSpreadingPolicy::Refresh(const cluster::ClusterState& state,
                                          const SyncContext& context,
                                          NetworkBuilder& builder) {
  if (!waiting_for_room_.tracking()) {
    // A fresh policy over a restored network: what its first Sync derives.
    return Sync(cluster::ChangeSet{}, state, SyncContext{context.now_us},
                builder);
  }
  const std::optional<std::vector<RequestShape>> shapes =
      waiting_for_room_.ShapesToReserve(state, context.now_us,
                                        params_.gang_first_after_s, starving_,
                                        reservations_owed_);
  if (!shapes) return absl::OkStatus();
  FLOWSCHED_RETURN_IF_ERROR(SyncShapeArcs(state, *shapes,
                                          EnsureShapeNodes(*shapes, builder),
                                          context.now_us, builder));
  reservations_owed_ = false;
  return absl::OkStatus();
}

absl::Status LoadSpreadingPolicy::Sync(const cluster::ChangeSet& changes,
                                       const cluster::ClusterState& state,
                                       const SyncContext& context,
                                       NetworkBuilder& builder) {
  FlowNetwork& network = builder.network();
  const NodeId sink = builder.EnsureSink();
  const NodeId aggregator = builder.EnsureClusterAggregator();

  // Jobs and machines first: task arcs point at their nodes.
  FLOWSCHED_RETURN_IF_ERROR(SyncJobsToSink(changes, state, builder));
  const auto sync_machine = [&](const cluster::Machine& machine,
                                NodeId node) -> absl::Status {
    const auto slots = static_cast<int64_t>(machine.task_slots);
    const auto running = static_cast<int64_t>(machine.running.size());
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
      slot_pieces[s] = {
          std::clamp<int64_t>(slot + covered - running, 0, covered),
          params_.per_task_cost * slot};
    }
    FLOWSCHED_RETURN_IF_ERROR(network.SetArc(
        aggregator, node, slot_pieces[0].capacity, slot_pieces[0].cost,
        std::span<const ArcSegment>(slot_pieces).subspan(1)));
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, {{sink, slots, 0}}));
    return absl::OkStatus();
  };
  FLOWSCHED_RETURN_IF_ERROR(
      SyncChangedMachines(changes, state, builder, sync_machine));
  // Waiting tasks that ask for resources, devices or labels go through
  // their request shape's class, whose arcs carry what each machine has
  // reserved for it (request_shapes.h); the others, through X.
  const std::optional<cluster::ChangeSet> widened = waiting_for_room_.Track(
      changes, state,
      [&](const cluster::Task& task) { return AsksForRoom(task, state); });
  const std::vector<RequestShape> shapes = waiting_for_room_.Shapes(state);
  const std::map<std::string, NodeId> class_nodes =
      EnsureShapeNodes(shapes, builder);
  FLOWSCHED_RETURN_IF_ERROR(SyncChangedTasks(
      widened ? *widened : changes, state, builder,
      [&](const cluster::Task& task, NodeId node, const TaskEnds& ends) {
        std::vector<DesiredArc> arcs;
        if (task.running()) {
          arcs.push_back({ends.job, 1, params_.preemption_cost});
          arcs.push_back({ends.machine, 1, 0});
        } else {
          arcs.push_back({ends.job, 1, params_.unscheduled_cost});
          NodeId via = aggregator;
          if (AsksForRoom(task, state)) {
            FLOWSCHED_ASSIGN_OR_RETURN(via,
                                       ShapeNodeOf(task, state, class_nodes));
          }
          arcs.push_back({via, 1, 0});
        }
        return builder.SetOutArcs(node, arcs);
      }));
  // The reservations walk the machines whatever changed: left to the
  // Refresh before the next solve when one follows.
  if (context.refresh_follows) {
    reservations_owed_ = true;
  } else {
    FLOWSCHED_RETURN_IF_ERROR(
        SyncShapeArcs(state, shapes, class_nodes, context.now_us, builder));
    reservations_owed_ = false;
  }
  return DrainTasksAtSink(builder);
}

}  // namespace flowsched::flow
