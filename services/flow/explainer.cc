#include "services/flow/explainer.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/flow/network_builder.h"
#include "services/flow/placement_extractor.h"
#include "services/flow/room_pool.h"

namespace flowsched::flow {
namespace {

constexpr int64_t kUnreached = std::numeric_limits<int64_t>::max();

// With `used`, the cost of the piece that carries the arc's last unit of
// flow (what the path paid); otherwise the cost of one more unit.
ExplainedArc Describe(const FlowNetwork& network, const ArcView& arc,
                      const std::vector<int64_t>& flow_by_slot,
                      bool used = false) {
  const int64_t flow = flow_by_slot[arc.slot];
  const int64_t unit = used ? flow - 1 : flow;  // 0-based unit priced
  int64_t capacity = arc.capacity;
  int64_t cost = arc.cost;
  bool found = unit < arc.capacity;
  for (const ArcSegment& piece : arc.extra_segments) {
    capacity += piece.capacity;
    if (!found) {
      cost = piece.cost;
      found = unit < capacity;
    }
  }
  const NodeData& dst = network.node(arc.dst);
  return {arc.src, arc.dst, dst.kind, dst.entity_id, capacity, cost, flow};
}

// Cheapest paths from `source` to machine nodes over arcs that do not end
// at the sink or an unscheduled aggregator and do not leave a machine.
// With `room_only`, only arcs with residual capacity count. Label
// correcting (costs may be negative; the network has no cycles among
// these arcs, so it terminates).
bool IsRoomPool(const NodeData& node) {
  return node.kind == NodeKind::kEquivalenceClass &&
         node.entity_id == NetworkBuilder::StableKey(RoomPool::kNodeKey);
}

void CheapestPaths(const FlowNetwork& network,
                   const std::vector<int64_t>& flow_by_slot, NodeId source,
                   bool room_only, std::map<NodeId, int64_t>& distance,
                   std::map<NodeId, ExplainedArc>& via) {
  distance[source] = 0;
  std::deque<NodeId> queue = {source};
  // A bound on relaxations guards against a cycle of negative cost that a
  // policy should never build.
  size_t steps = 0;
  const size_t limit = 4 * (network.arc_count() + network.node_count()) + 16;
  while (!queue.empty() && steps++ < limit) {
    const NodeId node = queue.front();
    queue.pop_front();
    if (node != source && network.node(node).kind == NodeKind::kMachine) {
      continue;
    }
    network.ForEachOutArc(node, [&](const ArcView& arc) {
      const NodeKind kind = network.node(arc.dst).kind;
      if (kind == NodeKind::kSink || kind == NodeKind::kJobUnscheduled ||
          kind == NodeKind::kTask) {
        return;
      }
      ExplainedArc described = Describe(network, arc, flow_by_slot);
      // The room pool's closed arcs (room_pool.h) reach nothing: R keeps
      // them only so that its arcs follow from the state.
      if (described.capacity == 0 && IsRoomPool(network.node(node))) return;
      // The task's own arcs carry its unit, which an alternative reroutes.
      const int64_t own =
          node == source ? std::min<int64_t>(described.flow, 1) : 0;
      if (room_only && described.flow - own >= described.capacity) return;
      const int64_t candidate = distance[node] + described.cost;
      auto it = distance.find(arc.dst);
      if (it == distance.end() || candidate < it->second) {
        distance[arc.dst] = candidate;
        via[arc.dst] = described;
        queue.push_back(arc.dst);
      }
    });
  }
}

std::vector<ExplainedArc> PathTo(NodeId target, NodeId source,
                                 const std::map<NodeId, ExplainedArc>& via) {
  std::vector<ExplainedArc> path;
  for (NodeId node = target; node != source && path.size() < 64;) {
    auto it = via.find(node);
    if (it == via.end()) break;
    path.push_back(it->second);
    node = it->second.src;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

// The task's own path: along flow-carrying arcs from `task_node` to
// `machine_node` (or, when that is kNoNode, to U_job and the sink).
std::vector<ExplainedArc> OwnFlowPath(const FlowNetwork& network,
                                      const std::vector<int64_t>& flow_by_slot,
                                      NodeId task_node, NodeId machine_node,
                                      NodeId sink) {
  std::map<NodeId, ExplainedArc> via;
  std::deque<NodeId> queue = {task_node};
  std::map<NodeId, bool> seen = {{task_node, true}};
  const NodeId target = machine_node != kNoNode ? machine_node : sink;
  while (!queue.empty()) {
    const NodeId node = queue.front();
    queue.pop_front();
    if (node == target) break;
    if (node != task_node && network.node(node).kind == NodeKind::kMachine) {
      continue;
    }
    network.ForEachOutArc(node, [&](const ArcView& arc) {
      if (flow_by_slot[arc.slot] <= 0 || seen[arc.dst]) return;
      // Waiting flow ends at U_job then the sink; placed flow must not
      // detour through the sink.
      if (machine_node != kNoNode &&
          network.node(arc.dst).kind == NodeKind::kSink) {
        return;
      }
      seen[arc.dst] = true;
      via[arc.dst] = Describe(network, arc, flow_by_slot, /*used=*/true);
      queue.push_back(arc.dst);
    });
  }
  return PathTo(target, task_node, via);
}

// How many machines the task reaches, and the cheapest path cost with room
// to any of them (kUnreached if none).
struct ReachedMachines {
  size_t reachable = 0;
  int64_t best_room = kUnreached;
};

// Alternatives: cheapest path to every reachable machine other than
// `machine_node`, with and without regard to room, into out.alternatives
// (those with room first, then by cost; at most `max_alternatives`).
ReachedMachines ExplainAlternatives(const FlowNetwork& network,
                                    const std::vector<int64_t>& flow_by_slot,
                                    NodeId task_node, NodeId machine_node,
                                    size_t max_alternatives,
                                    TaskExplanation& out) {
  std::map<NodeId, int64_t> any_distance, room_distance;
  std::map<NodeId, ExplainedArc> any_via, room_via;
  CheapestPaths(network, flow_by_slot, task_node, false, any_distance, any_via);
  CheapestPaths(network, flow_by_slot, task_node, true, room_distance,
                room_via);
  ReachedMachines reached;
  for (const auto& [node, distance] : any_distance) {
    if (network.node(node).kind != NodeKind::kMachine) continue;
    ++reached.reachable;
    const bool room = room_distance.contains(node);
    if (room) {
      reached.best_room = std::min(reached.best_room, room_distance.at(node));
    }
    if (node == machine_node) continue;
    PathOption option;
    option.machine_id = network.node(node).entity_id;
    option.has_room = room;
    option.path_cost = room ? room_distance.at(node) : distance;
    option.arcs = PathTo(node, task_node, room ? room_via : any_via);
    out.alternatives.push_back(std::move(option));
  }
  std::stable_sort(out.alternatives.begin(), out.alternatives.end(),
                   [](const PathOption& a, const PathOption& b) {
                     if (a.has_room != b.has_room) return a.has_room;
                     return a.path_cost < b.path_cost;
                   });
  if (out.alternatives.size() > max_alternatives) {
    out.alternatives.resize(max_alternatives);
  }
  return reached;
}

// The one-line reason for `out`'s placement or wait.
std::string ExplainReason(const TaskExplanation& out,
                          const ReachedMachines& reached) {
  std::string reason;
  if (out.machine_id != 0) {
    reason = absl::StrCat(out.running_on == out.machine_id
                              ? "keeps running on machine "
                          : out.running_on != 0 ? "moves to machine "
                                                : "placed on machine ",
                          out.machine_id, " at path cost ", out.path_cost);
  } else if (reached.reachable == 0) {
    reason =
        "waits: no machine is reachable from the task (no machine fits its "
        "request or matches its constraints)";
  } else if (reached.best_room == kUnreached) {
    reason = absl::StrCat("waits: every path to the ", reached.reachable,
                          " reachable machines is saturated");
  } else if (!out.has_unscheduled_arc ||
             reached.best_room >= out.unscheduled_cost) {
    reason = absl::StrCat("waits: the cheapest path with room costs ",
                          reached.best_room, ", not less than waiting (",
                          out.unscheduled_cost, ")");
  } else {
    reason = absl::StrCat(
        "waits: a path with room costs ", reached.best_room, " < waiting (",
        out.unscheduled_cost,
        "), but the round's optimum keeps the task "
        "unscheduled (its job's bounds or other tasks' larger savings)");
  }
  if (out.machine_id == 0 && out.running_on != 0) {
    reason =
        absl::StrCat("preempted from machine ", out.running_on, "; ", reason);
  }
  return reason;
}

}  // namespace

absl::StatusOr<TaskExplanation> ExplainTask(
    const FlowNetwork& network, const std::vector<int64_t>& flow_by_slot,
    TaskId task, const NetworkBuilder& builder, size_t max_alternatives) {
  const NodeId task_node = builder.FindTaskNode(task);
  if (task_node == kNoNode) {
    return absl::NotFoundError(
        absl::StrCat("task ", task.value(), " has no node"));
  }
  auto placements = ExtractPlacements(network, flow_by_slot);
  if (!placements.ok()) return placements.status();
  TaskExplanation out;
  out.task_id = task.value();
  out.running_on = network.node(task_node).running_on;
  for (const TaskPlacement& p : *placements) {
    if (p.task_node == task_node) out.machine_id = p.machine_id;
  }
  NodeId machine_node = kNoNode;
  if (out.machine_id != 0) {
    machine_node = builder.FindMachineNode(MachineId(out.machine_id));
  }

  network.ForEachOutArc(task_node, [&](const ArcView& arc) {
    if (network.node(arc.dst).kind == NodeKind::kJobUnscheduled) {
      out.has_unscheduled_arc = true;
      out.unscheduled_cost = Describe(network, arc, flow_by_slot).cost;
    }
  });
  out.path = OwnFlowPath(network, flow_by_slot, task_node, machine_node,
                         builder.sink());
  for (const ExplainedArc& arc : out.path) out.path_cost += arc.cost;
  const ReachedMachines reached = ExplainAlternatives(
      network, flow_by_slot, task_node, machine_node, max_alternatives, out);
  out.reason = ExplainReason(out, reached);
  return out;
}

}  // namespace flowsched::flow
