#include "services/flow/cpu_memory_policy.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_walk.h"

namespace flowsched::flow {
namespace {

// How many tasks of `request` fit in `free` (CPU and memory) and `slots`.
// Dimensions the machine does not report (capacity 0) or the task does not
// request do not limit.
int64_t FitCount(const cluster::Resources& capacity,
                 const cluster::Resources& free,
                 const cluster::Resources& request, int64_t slots) {
  int64_t n = std::max<int64_t>(0, slots);
  const auto limit = [&](int64_t cap, int64_t available, int64_t req) {
    if (cap > 0 && req > 0) n = std::min(n, std::max<int64_t>(0, available) / req);
  };
  limit(capacity.cpu_millis, free.cpu_millis, request.cpu_millis);
  limit(capacity.memory_bytes, free.memory_bytes, request.memory_bytes);
  return n;
}

// util_scale * the larger of CPU and memory utilisation with `k` more tasks
// of `request` on the machine.
int64_t LoadCost(const cluster::Machine& machine,
                 const cluster::Resources& request, int64_t k,
                 int64_t util_scale) {
  double utilisation = 0;
  const auto dim = [&](int64_t cap, int64_t alloc, int64_t req) {
    if (cap <= 0) return;
    utilisation = std::max(
        utilisation, (static_cast<double>(alloc) + static_cast<double>(k) *
                                                       static_cast<double>(req)) /
                         static_cast<double>(cap));
  };
  dim(machine.capacity.cpu_millis, machine.allocated.cpu_millis,
      request.cpu_millis);
  dim(machine.capacity.memory_bytes, machine.allocated.memory_bytes,
      request.memory_bytes);
  return static_cast<int64_t>(
      std::llround(std::min(utilisation, 1.0) * static_cast<double>(util_scale)));
}

}  // namespace

std::string CpuMemoryPolicy::ClassText(const cluster::Task& task,
                                       const cluster::ClusterState& state) {
  const cluster::Job* job = state.FindJob(task.job);
  if (job != nullptr && job->different_machines) {
    return absl::StrCat("cm|dm|", task.job.value());
  }
  return absl::StrCat("cm|cpu=", task.spec.request.cpu_millis,
                      "|mem=", task.spec.request.memory_bytes,
                      "|req=", SelectorText(task.spec.required_labels),
                      "|pref=", SelectorText(task.spec.preferred_labels));
}

absl::Status CpuMemoryPolicy::Sync(const cluster::ChangeSet& changes,
                                   const cluster::ClusterState& state,
                                   const SyncContext& /*context*/,
                                   NetworkBuilder& builder) {
  builder.EnsureSink();

  // Machines: slots to the sink (running tasks arrive directly).
  FLOWSCHED_RETURN_IF_ERROR(SyncAllMachinesToSink(changes, state, builder));
  FLOWSCHED_RETURN_IF_ERROR(SyncJobsToSink(changes, state, builder));

  // Classes of the waiting tasks, in key order (deterministic).
  std::map<std::string, TaskClass> classes;
  for (const auto& [id, task] : state.tasks()) {
    if (task.running()) continue;
    TaskClass& c = classes[ClassText(task, state)];
    if (c.waiting == 0) {
      c.request = task.spec.request;
      c.required = task.spec.required_labels;
      c.preferred = task.spec.preferred_labels;
      const cluster::Job* job = state.FindJob(task.job);
      if (job != nullptr && job->different_machines) {
        c.different_machines_job = task.job;
      }
    } else if (c.different_machines_job.value() != 0) {
      // One aggregator serves the whole job: it must fit every task.
      c.request.cpu_millis =
          std::max(c.request.cpu_millis, task.spec.request.cpu_millis);
      c.request.memory_bytes =
          std::max(c.request.memory_bytes, task.spec.request.memory_bytes);
      c.required.insert(task.spec.required_labels.begin(),
                        task.spec.required_labels.end());
      if (c.preferred != task.spec.preferred_labels) c.preferred.clear();
    }
    ++c.waiting;
  }
  std::vector<std::pair<const std::string*, TaskClass*>> order;
  std::map<std::string, NodeId> class_nodes;
  for (auto& [text, c] : classes) {
    order.emplace_back(&text, &c);
    class_nodes[text] = builder.EnsureAggregatorNode(
        NodeKind::kEquivalenceClass, NetworkBuilder::StableKey(text));
  }

  FLOWSCHED_RETURN_IF_ERROR(SyncChangedTasks(
      changes, state, builder,
      [&](const cluster::Task& task, NodeId node, const TaskEnds& ends) {
        std::vector<DesiredArc> arcs;
        if (task.running()) {
          arcs.push_back({ends.machine, 1, 0});
          arcs.push_back({ends.job, 1, params_.preemption_cost});
        } else {
          arcs.push_back({class_nodes.at(ClassText(task, state)), 1, 0});
          arcs.push_back({ends.job, 1, params_.unscheduled_cost});
        }
        return builder.SetOutArcs(node, arcs);
      }));

  // Class -> machine arcs by greedy reservation (see the header).
  std::map<std::string, std::vector<DesiredArc>> class_arcs;
  size_t machine_index = 0;
  for (const auto& [machine_id, machine] : state.machines()) {
    const size_t rotation = order.empty() ? 0 : machine_index % order.size();
    ++machine_index;
    cluster::Resources free{
        machine.capacity.cpu_millis - machine.allocated.cpu_millis,
        machine.capacity.memory_bytes - machine.allocated.memory_bytes, 0};
    int64_t slots = machine.free_slots();
    const NodeId machine_node = builder.FindMachineNode(machine_id);
    for (size_t j = 0; j < order.size() && slots > 0; ++j) {
      const auto& [text, c] = order[(rotation + j) % order.size()];
      if (!LabelsMatch(machine.labels, c->required)) continue;
      int64_t n = std::min(
          c->waiting, FitCount(machine.capacity, free, c->request, slots));
      if (c->different_machines_job.value() != 0) {
        const cluster::Job* job = state.FindJob(c->different_machines_job);
        n = std::min<int64_t>(n, 1);
        if (job != nullptr && JobRunsOn(*job, machine)) n = 0;
      }
      if (n <= 0) continue;
      free.cpu_millis -= n * c->request.cpu_millis;
      free.memory_bytes -= n * c->request.memory_bytes;
      slots -= n;
      const int64_t discount =
          c->preferred.empty() || !LabelsMatch(machine.labels, c->preferred)
              ? 0
              : params_.preferred_discount;
      // Convex pieces: the k-th task costs the load after k tasks; beyond
      // kMaxArcSegments the last piece takes the rest.
      const int64_t pieces =
          std::min<int64_t>(n, static_cast<int64_t>(kMaxArcSegments) + 1);
      DesiredArc arc{machine_node, 1,
                     LoadCost(machine, c->request, 1, params_.util_scale) -
                         discount,
                     {}};
      for (int64_t k = 2; k <= pieces; ++k) {
        arc.extra_segments.push_back(
            {k == pieces ? n - k + 1 : 1,
             LoadCost(machine, c->request, k, params_.util_scale) - discount});
      }
      class_arcs[*text].push_back(std::move(arc));
    }
  }
  for (const auto& [text, node] : class_nodes) {
    FLOWSCHED_RETURN_IF_ERROR(builder.SetOutArcs(node, class_arcs[text]));
  }
  // Classes without waiting tasks go (their in-arcs went with the tasks).
  std::set<uint64_t> live;
  for (const auto& [text, node] : class_nodes) {
    live.insert(NetworkBuilder::StableKey(text));
  }
  RemoveAggregatorsExcept(NodeKind::kEquivalenceClass, live, builder);
  return DrainTasksAtSink(builder);
}

}  // namespace flowsched::flow
