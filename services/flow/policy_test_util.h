#pragma once

// Test helpers for policies: solve the network a policy built with the
// reference solver, check the certificate, and read the placements out the
// way the solver worker does.

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "services/cluster/cluster_state.h"
#include "services/common/status_macros.h"
#include "services/flow/flow_network.h"
#include "services/flow/network_builder.h"
#include "services/flow/placement_extractor.h"
#include "services/flow/scheduling_policy.h"
#include "services/solver/flow_checker.h"
#include "services/solver/successive_shortest_path.h"

namespace flowsched::flow::testing {

struct SolvedRound {
  std::vector<int64_t> flow_by_slot;
  std::vector<TaskPlacement> placements;
  int64_t total_cost = 0;
  // task id -> machine id (0: unscheduled)
  std::map<uint64_t, uint64_t> machine_of;
};

inline absl::StatusOr<SolvedRound> SolveNetwork(const FlowNetwork& network) {
  solver::McmfProblem problem;
  std::vector<ArcSlot> slots;
  network.ExportProblem(problem, slots);
  solver::SuccessiveShortestPath ssp;
  FLOWSCHED_ASSIGN_OR_RETURN(solver::McmfSolution solution, ssp.Solve(problem));
  if (solution.outcome != solver::McmfOutcome::kOptimal) {
    return absl::FailedPreconditionError("the network is infeasible");
  }
  FLOWSCHED_RETURN_IF_ERROR(solver::CheckOptimalFlow(problem, solution));
  SolvedRound round;
  round.total_cost = solution.total_cost;
  round.flow_by_slot.assign(network.arc_slot_count(), 0);
  for (size_t i = 0; i < slots.size(); ++i) {
    round.flow_by_slot[slots[i]] += solution.flow[i];
  }
  FLOWSCHED_ASSIGN_OR_RETURN(round.placements,
                             ExtractPlacements(network, round.flow_by_slot));
  for (const TaskPlacement& p : round.placements) {
    round.machine_of[p.task_id] = p.machine_id;
  }
  return round;
}

// Applies a round's placements as the graph manager should: first every
// task that leaves its machine (preempted or moving), then every placement,
// so that slots and resources freed in the round are reusable in it (two
// tasks may swap machines). Returns how many tasks changed.
inline absl::StatusOr<int> ApplyRound(const SolvedRound& round,
                                      cluster::ClusterState& state,
                                      int64_t now_us,
                                      cluster::ChangeSet& changes) {
  int applied = 0;
  for (const TaskPlacement& p : round.placements) {
    if (p.running_on != 0 && p.machine_id != p.running_on) {
      FLOWSCHED_RETURN_IF_ERROR(
          state.Preempt(TaskId(p.task_id), now_us, changes));
      ++applied;
    }
  }
  for (const TaskPlacement& p : round.placements) {
    if (p.machine_id != 0 && p.machine_id != p.running_on) {
      FLOWSCHED_RETURN_IF_ERROR(state.Place(
          TaskId(p.task_id), MachineId(p.machine_id), now_us, changes));
      if (p.running_on == 0) ++applied;
    }
  }
  return applied;
}

// The network as sorted lines naming nodes by kind and entity, not by id,
// each arc with its pieces:
// equal for two networks built in different orders with the same nodes and
// arcs. With `classes_by_task`, a class node is named by the lowest task
// with an arc into it instead of its key, so two policies that group the
// same tasks under different class keys describe alike.
inline std::vector<std::string> Describe(const FlowNetwork& network,
                                         bool classes_by_task = false) {
  std::map<NodeId, uint64_t> first_task;  // class node -> lowest task entity
  if (classes_by_task) {
    network.ForEachNode([&](NodeId id, const NodeData& d) {
      if (d.kind != NodeKind::kTask) return;
      network.ForEachOutArc(id, [&](const ArcView& arc) {
        if (network.node(arc.dst).kind != NodeKind::kEquivalenceClass) return;
        auto [it, inserted] = first_task.emplace(arc.dst, d.entity_id);
        if (!inserted) it->second = std::min(it->second, d.entity_id);
      });
    });
  }
  std::vector<std::string> lines;
  const auto name = [&](NodeId id) {
    const NodeData& d = network.node(id);
    if (auto first = first_task.find(id); first != first_task.end()) {
      return absl::StrCat("class of task ", first->second);
    }
    return absl::StrCat(static_cast<int>(d.kind), ":", d.entity_id);
  };
  network.ForEachNode([&](NodeId id, const NodeData& d) {
    lines.push_back(absl::StrCat("node ", name(id), " supply ", d.supply,
                                 " on ", d.running_on));
    network.ForEachOutArc(id, [&](const ArcView& arc) {
      std::string line =
          absl::StrCat("arc ", name(id), " -> ", name(arc.dst), " cap ",
                       arc.capacity, " cost ", arc.cost);
      for (const ArcSegment& piece : arc.extra_segments) {
        absl::StrAppend(&line, " + ", piece.capacity, "@", piece.cost);
      }
      lines.push_back(std::move(line));
    });
  });
  std::sort(lines.begin(), lines.end());
  return lines;
}

// The stable 64-bit hash of the network's Describe lines (each ended by a
// newline): a fingerprint of every node, arc and piece, independent of
// node ids.
inline uint64_t Fingerprint(const FlowNetwork& network,
                            bool classes_by_task = false) {
  std::string text;
  for (const std::string& line : Describe(network, classes_by_task)) {
    absl::StrAppend(&text, line, "\n");
  }
  return NetworkBuilder::StableKey(text);
}

// A change set naming every job, machine and task of `state`: what a
// fresh policy's first Sync is given to build the whole network.
inline cluster::ChangeSet Everything(const cluster::ClusterState& state) {
  cluster::ChangeSet changes;
  for (const auto& [id, job] : state.jobs()) changes.jobs.insert(id);
  for (const auto& [id, machine] : state.machines()) {
    changes.machines.insert(id);
  }
  for (const auto& [id, task] : state.tasks()) changes.tasks.insert(id);
  return changes;
}

// Describe of the network `fresh` (a policy that has synced nothing)
// builds for `state` from scratch: what a policy that kept state between
// syncs must equal.
inline absl::StatusOr<std::vector<std::string>> DescribeFreshBuild(
    SchedulingPolicy& fresh, const cluster::ClusterState& state,
    int64_t now_us) {
  FlowNetwork network;
  NetworkBuilder builder(network);
  FLOWSCHED_RETURN_IF_ERROR(
      fresh.Sync(Everything(state), state, SyncContext{now_us}, builder));
  return Describe(network);
}

// A scenario a pin test drives through one policy: events applied at
// now_us, syncs (with the Refresh the graph manager owes when `deferred`)
// each folding the network's Fingerprint into `fingerprint`, and rounds
// solved and applied as the graph manager applies them.
class PinnedRun {
 public:
  // `classes_by_task`: Fingerprint's, for policies whose class keys differ.
  PinnedRun(SchedulingPolicy& policy, bool deferred,
            bool classes_by_task = false)
      : policy_(policy),
        deferred_(deferred),
        classes_by_task_(classes_by_task) {}
  absl::Status Apply(cluster::EventBody body) {
    return state_.Apply(cluster::ClusterEvent{"e", now_us, "t", body}, now_us,
                        changes_);
  }
  absl::Status Sync() {
    const SyncContext context{.now_us = now_us, .refresh_follows = deferred_};
    FLOWSCHED_RETURN_IF_ERROR(
        policy_.Sync(changes_, state_, context, builder_));
    if (deferred_) {
      FLOWSCHED_RETURN_IF_ERROR(policy_.Refresh(state_, context, builder_));
    }
    changes_.Clear();
    fingerprint = fingerprint * 1099511628211ULL ^
                  Fingerprint(network_, classes_by_task_);
    return absl::OkStatus();
  }
  // Solves, applies at now_us, and syncs.
  absl::StatusOr<SolvedRound> Round() {
    FLOWSCHED_ASSIGN_OR_RETURN(SolvedRound round, SolveNetwork(network_));
    FLOWSCHED_RETURN_IF_ERROR(
        ApplyRound(round, state_, now_us, changes_).status());
    FLOWSCHED_RETURN_IF_ERROR(Sync());
    return round;
  }
  // Each running task finishes with chance 1 in `one_in` (one draw each,
  // in task order).
  absl::Status FinishSomeRunning(std::mt19937_64& rng, uint64_t one_in) {
    std::vector<std::pair<JobId, TaskId>> finishing;
    for (const auto& [id, task] : state_.tasks()) {
      if (task.running() && rng() % one_in == 0) {
        finishing.emplace_back(task.job, id);
      }
    }
    for (const auto& [job, task] : finishing) {
      FLOWSCHED_RETURN_IF_ERROR(Apply(cluster::TaskFinished{job, task}));
    }
    return absl::OkStatus();
  }
  [[nodiscard]] const cluster::ClusterState& state() const { return state_; }

  int64_t now_us = 1;
  uint64_t fingerprint = 0;

 private:
  SchedulingPolicy& policy_;
  bool deferred_;
  bool classes_by_task_;
  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
  FlowNetwork network_;
  NetworkBuilder builder_{network_};
};

}  // namespace flowsched::flow::testing
