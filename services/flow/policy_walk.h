#pragma once

// The walk over a change set that every policy's Sync shares, written once:
// entities gone from the state leave the network, live ones get their node,
// a task's arcs find its job's and its machine's nodes, and the sink drains
// one unit per task. Policies differ only in the arcs and costs they give.

#include <cstdint>
#include <functional>
#include <set>

#include "absl/status/status.h"
#include "services/cluster/change_set.h"
#include "services/cluster/cluster_state.h"
#include "services/flow/network_builder.h"

namespace flowsched::flow {

// Each changed job: removed if gone, else its unscheduled aggregator U_j
// with one arc to the sink for every task of the job.
absl::Status SyncJobsToSink(const cluster::ChangeSet& changes,
                            const cluster::ClusterState& state,
                            NetworkBuilder& builder);

// Machines gone are removed; every machine gets one arc to the sink of
// capacity task_slots (running tasks arrive at their machine directly).
absl::Status SyncAllMachinesToSink(const cluster::ChangeSet& changes,
                                   const cluster::ClusterState& state,
                                   NetworkBuilder& builder);

// The start of a policy whose tasks reach machines through aggregators:
// SyncAllMachinesToSink, then SyncJobsToSink.
absl::Status SyncMachinesAndJobsToSink(const cluster::ChangeSet& changes,
                                       const cluster::ClusterState& state,
                                       NetworkBuilder& builder);

// Each changed machine: removed if gone, else its node is made and
// `sync(machine, node)` sets its arcs; the first error stops the walk.
absl::Status SyncChangedMachines(
    const cluster::ChangeSet& changes, const cluster::ClusterState& state,
    NetworkBuilder& builder,
    const std::function<absl::Status(const cluster::Machine&, NodeId)>& sync);

// The nodes a task's arcs lead to.
struct TaskEnds {
  NodeId job = kNoNode;      // its job's unscheduled aggregator
  NodeId machine = kNoNode;  // the machine it runs on; kNoNode if waiting
};

// Each changed task: removed if gone, else its node (supply 1, running_on
// its machine) is made and `sync(task, node, ends)` sets its arcs.
// Internal if its job or its machine has no node (a policy bug: jobs and
// machines are synced first).
absl::Status SyncChangedTasks(
    const cluster::ChangeSet& changes, const cluster::ClusterState& state,
    NetworkBuilder& builder,
    const std::function<absl::Status(const cluster::Task&, NodeId,
                                     const TaskEnds&)>& sync);

// Removes the aggregators of `kind` whose key is not in `live`.
void RemoveAggregatorsExcept(NodeKind kind, const std::set<uint64_t>& live,
                             NetworkBuilder& builder);

// The sink drains one unit per task node, plus `extra` units.
absl::Status DrainTasksAtSink(NetworkBuilder& builder, int64_t extra = 0);

}  // namespace flowsched::flow
