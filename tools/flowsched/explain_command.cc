// `flowsched explain TASK`: why a task runs where it runs, or why it waits.
//
// The graph manager never sees flows; the solver worker does, but only in
// memory. So the command rebuilds what the solver would see from the graph
// manager's RocksDB (opened read-only, as `inspect digest` does, so it works
// beside a running graph manager or after it stopped), solves that network
// with the default solver, checks the result like the solver worker does,
// and explains the task's flow (flow::ExplainTask). The stored network is
// the one of the latest committed state, refreshed as the next cut would
// (the policy's owed reservations, its time-dependent prices), so the
// answer is what the next round would decide, which equals the current
// placement once the scheduler has settled.

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flowsched/v1/state.pb.h"
#include "fmt/format.h"
#include "services/cluster/cluster_state.h"
#include "services/cluster/resource_fit.h"
#include "services/core/policy_network.h"
#include "services/flow/explainer.h"
#include "services/flow/flow_network.h"
#include "services/flow/network_builder.h"
#include "services/flow/profile_policy.h"
#include "services/flow/request_shapes.h"
#include "services/flow/scheduling_policy.h"
#include "services/graph_manager/state_reader.h"
#include "services/solver/flow_checker.h"
#include "services/solver/mcmf_problem.h"
#include "services/solver/solver_registry.h"
#include "tools/flowsched/commands.h"

namespace flowsched::tools {
namespace {

std::string DescribeNode(const flow::FlowNetwork& network, flow::NodeId id) {
  if (!network.IsLive(id)) return fmt::format("node {}", id);
  const flow::NodeData& node = network.node(id);
  switch (node.kind) {
    case flow::NodeKind::kTask:
      return fmt::format("task {}", node.entity_id);
    case flow::NodeKind::kJobUnscheduled:
      return fmt::format("unscheduled U(job {})", node.entity_id);
    case flow::NodeKind::kClusterAggregator:
      return "cluster aggregator X";
    case flow::NodeKind::kRack:
      return fmt::format("aggregator {:x} (rack or request class)",
                         node.entity_id);
    case flow::NodeKind::kMachine:
      return fmt::format("machine {}", node.entity_id);
    case flow::NodeKind::kSink:
      return "sink";
    case flow::NodeKind::kEquivalenceClass:
      return fmt::format("equivalence class {:x}", node.entity_id);
    case flow::NodeKind::kUnused:
      break;
  }
  return fmt::format("node {}", id);
}

void PrintArcs(const flow::FlowNetwork& network,
               const std::vector<flow::ExplainedArc>& arcs,
               const std::string& indent) {
  for (const flow::ExplainedArc& arc : arcs) {
    fmt::print("{}{} -> {}: capacity {}, cost {}, flow {}\n", indent,
               DescribeNode(network, arc.src), DescribeNode(network, arc.dst),
               arc.capacity, arc.cost, arc.flow);
  }
}

// Where a waiting task fits now by the one fit rule (cluster::FitTask, as
// the graph manager checks decisions) and the profile's filters beyond it
// (`limits`), and why not elsewhere: machines counted per reason, most
// common first.
void PrintFit(const cluster::ClusterState& state, const cluster::Task& task,
              flow::RoomLimits limits) {
  size_t fits = 0;
  std::map<std::string, size_t> reasons;
  for (const auto& [id, machine] : state.machines()) {
    const cluster::Fit fit = cluster::FitTask(machine, task.spec);
    std::string reason = fit.fits()
                             ? flow::LimitsRefuse(machine, task.spec, limits)
                             : fit.reason;
    if (reason.empty()) {
      ++fits;
    } else {
      ++reasons[std::move(reason)];
    }
  }
  std::vector<std::pair<std::string, size_t>> order(reasons.begin(),
                                                    reasons.end());
  std::stable_sort(
      order.begin(), order.end(),
      [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string why;
  for (const auto& [reason, count] : order) {
    why += fmt::format("{}{} ({})", why.empty() ? "" : ", ", reason, count);
  }
  fmt::print("  fits {} of {} machines now{}\n", fits, state.machines().size(),
             why.empty() ? "" : fmt::format("; the others: {}", why));
}

// The price a profile gives the first task of `shape` on `machine_id`,
// term by term (flow::ProfilePolicy::ExplainCost); nothing for a machine
// gone. A shape split by input rack is priced by this task's racks (the
// policy's by its lowest task's, which share the first).
std::string TermBreakdown(flow::ProfilePolicy& profile,
                          const cluster::ClusterState& state,
                          const flow::RequestShape& shape,
                          uint64_t machine_id) {
  const cluster::Machine* machine = state.FindMachine(MachineId(machine_id));
  if (machine == nullptr) return "";
  std::string text;
  int64_t total = 0;
  for (const auto& [name, cost] :
       profile.ExplainCost(state, *machine, shape, 1)) {
    text += fmt::format("{}{} {}", text.empty() ? "" : " + ", name, cost);
    total += cost;
  }
  return text.empty() ? "" : fmt::format("{} = {}", text, total);
}

// A waiting task's shape under a profile, to price its class arcs term by
// term.
struct Pricing {
  flow::ProfilePolicy* profile = nullptr;  // null: no breakdown
  std::optional<flow::RequestShape> shape;
};

// Prints an option's term breakdown when its path goes through a request
// shape's class (the profile's price; a pool prices slots alone).
void PrintTerms(Pricing& pricing, const cluster::ClusterState& state,
                uint64_t machine_id,
                const std::vector<flow::ExplainedArc>& arcs,
                const std::string& indent) {
  if (pricing.profile == nullptr || !pricing.shape.has_value()) return;
  const bool through_class =
      std::any_of(arcs.begin(), arcs.end(), [](const flow::ExplainedArc& arc) {
        return arc.dst_kind == flow::NodeKind::kEquivalenceClass;
      });
  if (!through_class) return;
  const std::string terms =
      TermBreakdown(*pricing.profile, state, *pricing.shape, machine_id);
  if (!terms.empty()) fmt::print("{}terms: {}\n", indent, terms);
}

// Restores, solves and explains; the exit code as the command returns it.
int Explain(const std::string& data_dir, uint64_t task_id,
            size_t max_alternatives) {
  auto reader = graph_manager::StateReader::Open(data_dir);
  if (!reader.ok()) {
    std::cerr << "flowsched explain: " << reader.status().ToString() << "\n";
    return 1;
  }
  absl::StatusOr<graph_manager::StoredState> stored = (*reader)->Load();
  if (!stored.ok()) {
    std::cerr << "flowsched explain: " << stored.status().ToString() << "\n";
    return 1;
  }
  const cluster::ClusterState& state = stored->state;
  const v1::GraphManagerMeta& meta = stored->meta;
  // The batches since the last cut may have left the room reservations to
  // the next cut's Refresh (SyncContext::refresh_follows): derive them as
  // that cut would, in memory only.
  core::PolicyNetwork policy_network;
  policy_network.network() = std::move(stored->network);
  absl::Status status = policy_network.Adopt(
      meta.policy().empty() ? flow::PolicyNames().front() : meta.policy());
  if (status.ok()) {
    status = policy_network.Refresh(state, state.last_time_us());
  }
  flow::FlowNetwork& network = policy_network.network();
  const flow::NetworkBuilder& builder = policy_network.builder();
  if (!status.ok()) {
    std::cerr << "flowsched explain: " << status.ToString() << "\n";
    return 1;
  }
  const cluster::Task* task = state.FindTask(TaskId(task_id));
  if (task == nullptr) {
    std::cerr << "flowsched explain: task " << task_id
              << " is not in the cluster state (never submitted, or "
                 "finished)\n";
    return 1;
  }

  solver::McmfProblem problem;
  std::vector<flow::ArcSlot> arc_slots;
  network.ExportProblem(problem, arc_slots);
  auto solver = solver::MakeSolver(solver::kDefaultSolver);
  if (!solver.ok()) {
    std::cerr << "flowsched explain: " << solver.status().ToString() << "\n";
    return 1;
  }
  auto solution = (*solver)->Solve(problem);
  status = solution.ok() ? absl::OkStatus() : solution.status();
  if (status.ok() && solution->outcome != solver::McmfOutcome::kOptimal) {
    status = absl::InternalError("the stored network is infeasible");
  }
  // The same certificate the solver worker demands before publishing.
  if (status.ok()) status = solver::CheckOptimalFlow(problem, *solution);
  if (!status.ok()) {
    std::cerr << "flowsched explain: " << status.ToString() << "\n";
    return 1;
  }
  std::vector<int64_t> flow_by_slot(network.arc_slot_count(), 0);
  for (size_t i = 0; i < arc_slots.size(); ++i) {
    flow_by_slot[arc_slots[i]] += solution->flow[i];
  }
  auto explained = flow::ExplainTask(network, flow_by_slot, TaskId(task_id),
                                     builder, max_alternatives);
  if (!explained.ok()) {
    std::cerr << "flowsched explain: " << explained.status().ToString() << "\n";
    return 1;
  }

  fmt::print("task {} of job {}: {}\n", task_id, task->job.value(),
             task->running()
                 ? fmt::format("runs on machine {}", task->machine.value())
                 : std::string("waits"));
  fmt::print(
      "  policy {}, network of {} nodes and {} arcs, solved with {} "
      "(total cost {}, checked optimal)\n",
      meta.policy().empty() ? "(not recorded)" : meta.policy(),
      network.node_count(), network.arc_count(),
      std::string(solver::kDefaultSolver), solution->total_cost);
  fmt::print("  next round: {}\n", explained->reason);
  // A profile prices class arcs by weighted terms: shown per machine for a
  // waiting task (a fresh policy of the same spec prices them; the
  // network's arcs are the ones the solver saw).
  absl::StatusOr<std::unique_ptr<flow::SchedulingPolicy>> fresh =
      flow::MakePolicy(meta.policy().empty() ? flow::PolicyNames().front()
                                             : meta.policy());
  Pricing pricing;
  if (fresh.ok()) {
    pricing.profile = dynamic_cast<flow::ProfilePolicy*>(fresh->get());
    pricing.shape = flow::WaitingShapeOf(*task, state);
  }
  if (!task->running()) {
    PrintFit(state, *task,
             pricing.profile != nullptr ? pricing.profile->Limits()
                                        : flow::RoomLimits{});
  }
  if (!explained->path.empty()) {
    fmt::print("  path (cost {}):\n", explained->path_cost);
    PrintArcs(network, explained->path, "    ");
    PrintTerms(pricing, state, explained->machine_id, explained->path, "    ");
  }
  if (explained->has_unscheduled_arc) {
    fmt::print("  waiting costs {} (arc to its job's unscheduled node)\n",
               explained->unscheduled_cost);
  }
  if (explained->alternatives.empty()) {
    fmt::print("  no other machine is reachable\n");
  } else {
    fmt::print("  cheapest alternatives:\n");
    for (const flow::PathOption& option : explained->alternatives) {
      fmt::print("    machine {}: path cost {}{}\n", option.machine_id,
                 option.path_cost,
                 option.has_room ? "" : " (no room left on the path)");
      PrintArcs(network, option.arcs, "      ");
      PrintTerms(pricing, state, option.machine_id, option.arcs, "      ");
    }
  }
  return 0;
}

}  // namespace

CommandMain AddExplainCommand(CLI::App& app, CommonFlags& flags) {
  auto* cmd = app.add_subcommand(
      "explain",
      "Explain where a task runs or why it waits: rebuilds the network from "
      "the graph manager's RocksDB (read-only), solves and checks it, and "
      "prints the task's path, its costs and the cheapest alternatives");
  auto task = std::make_shared<uint64_t>(0);
  auto alternatives = std::make_shared<size_t>(5);
  cmd->add_option("task", *task, "Task id")->required();
  cmd->add_option("--alternatives", *alternatives,
                  "How many alternative machines to list")
      ->capture_default_str();
  return [&flags, task, alternatives]() {
    return Explain(flags.data_dir, *task, *alternatives);
  };
}

}  // namespace flowsched::tools
