#include "services/flow/network_aware_policy.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_walk.h"

namespace flowsched::flow {
namespace {

constexpr int64_t kBytesPerMiB = int64_t{1} << 20;

int64_t Load(const cluster::Machine& machine) {
  return std::max(machine.used.network_bytes_per_sec,
                  machine.allocated.network_bytes_per_sec);
}

// The request aggregators' arcs to machines, by request: each machine's
// spare bandwidth and free slots reserved greedily among the requests
// (`order`: request, waiting count) in an order rotated per machine.
std::map<int64_t, std::vector<DesiredArc>> NetworkReservationArcs(
    const cluster::ClusterState& state,
    const std::vector<std::pair<int64_t, int64_t>>& order,
    const NetworkBuilder& builder) {
  std::map<int64_t, std::vector<DesiredArc>> ra_arcs;
  size_t machine_index = 0;
  for (const auto& [machine_id, machine] : state.machines()) {
    const size_t rotation = order.empty() ? 0 : machine_index % order.size();
    ++machine_index;
    const int64_t capacity = machine.capacity.network_bytes_per_sec;
    const int64_t load = Load(machine);
    int64_t spare = capacity - load;
    int64_t slots = machine.free_slots();
    for (size_t j = 0; j < order.size() && slots > 0; ++j) {
      const auto& [request, count] = order[(rotation + j) % order.size()];
      int64_t n = std::min(count, slots);
      if (capacity > 0 && request > 0) {
        n = std::min(n, std::max<int64_t>(0, spare) / request);
      }
      if (n <= 0) continue;
      if (capacity > 0) spare -= n * request;
      slots -= n;
      // clang 14 cannot capture a structured binding: capture a copy.
      const auto cost = [&, per_task = request](int64_t k) {
        return std::min(solver::kMaxArcCost,
                        (load + k * per_task) / kBytesPerMiB);
      };
      const int64_t pieces =
          std::min<int64_t>(n, static_cast<int64_t>(kMaxArcSegments) + 1);
      DesiredArc arc{builder.FindMachineNode(machine_id), 1, cost(1), {}};
      for (int64_t k = 2; k <= pieces; ++k) {
        arc.extra_segments.push_back({k == pieces ? n - k + 1 : 1, cost(k)});
      }
      ra_arcs[request].push_back(std::move(arc));
    }
  }
  return ra_arcs;
}

}  // namespace

uint64_t NetworkAwarePolicy::AggregatorKey(int64_t bytes_per_sec) {
  return NetworkBuilder::StableKey(absl::StrCat("net|", bytes_per_sec));
}

absl::Status NetworkAwarePolicy::Sync(const cluster::ChangeSet& changes,
                                      const cluster::ClusterState& state,
                                      const SyncContext& /*context*/,
                                      NetworkBuilder& builder) {
  // Machines: slots to the sink (running tasks arrive directly).
  FLOWSCHED_RETURN_IF_ERROR(SyncMachinesAndJobsToSink(changes, state, builder));

  // Request aggregators of the waiting tasks: request -> waiting count.
  std::map<int64_t, int64_t> waiting;
  for (const auto& [id, task] : state.tasks()) {
    if (!task.running()) {
      ++waiting[std::max<int64_t>(0, task.spec.request.network_bytes_per_sec)];
    }
  }
  std::vector<std::pair<int64_t, int64_t>> order(waiting.begin(),
                                                 waiting.end());
  std::map<int64_t, NodeId> ra_nodes;
  for (const auto& [request, count] : order) {
    ra_nodes[request] = builder.EnsureAggregatorNode(
        NodeKind::kEquivalenceClass, AggregatorKey(request));
  }

  FLOWSCHED_RETURN_IF_ERROR(SyncChangedTasks(
      changes, state, builder,
      [&](const cluster::Task& task, NodeId node, const TaskEnds& ends) {
        std::vector<DesiredArc> arcs;
        if (task.running()) {
          arcs.push_back({ends.machine, 1, 0});
          arcs.push_back({ends.job, 1, params_.preemption_cost});
        } else {
          arcs.push_back({ra_nodes.at(std::max<int64_t>(
                              0, task.spec.request.network_bytes_per_sec)),
                          1, 0});
          arcs.push_back({ends.job, 1, params_.unscheduled_cost});
        }
        return builder.SetOutArcs(node, arcs);
      }));

  // RA -> machine arcs: greedy reservation of spare bandwidth and slots in
  // an order rotated per machine (see request_shapes.h for why).
  std::map<int64_t, std::vector<DesiredArc>> ra_arcs =
      NetworkReservationArcs(state, order, builder);
  for (const auto& [request, node] : ra_nodes) {
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, ra_arcs[request]));
  }
  std::set<uint64_t> live;
  for (const auto& [request, node] : ra_nodes) {
    live.insert(AggregatorKey(request));
  }
  RemoveAggregatorsExcept(NodeKind::kEquivalenceClass, live, builder);
  return DrainTasksAtSink(builder);
}

}  // namespace flowsched::flow
