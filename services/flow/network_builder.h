#pragma once

// Keeps the mapping between cluster entities and flow network nodes and
// offers the structural edits every scheduling policy needs: ensure a node
// for an entity, remove it, and set a node's out-arcs to a desired list
// (only differences become graph changes).
//
// Ownership: refers to a FlowNetwork it does not own.
// Thread-safety: none.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "services/common/strong_id.h"
#include "services/flow/flow_network.h"

namespace flowsched::flow {

class NetworkBuilder {
 public:
  explicit NetworkBuilder(FlowNetwork& network) : network_(network) {}

  // Rebuilds the entity maps from the nodes of a restored network.
  // DataLoss if two nodes claim the same entity or a singleton repeats.
  absl::Status RestoreFromNetwork();

  NodeId EnsureSink();
  NodeId EnsureClusterAggregator();
  NodeId EnsureJobNode(JobId job);
  NodeId EnsureMachineNode(MachineId machine);
  // Rack aggregators are keyed by StableKey(rack), stored as the node's
  // entity_id, so a restored network finds them again.
  NodeId EnsureRackNode(const std::string& rack);
  // Policy-defined aggregators (Firmament section 3.2: equivalence classes,
  // selector aggregators, request aggregators) of kind kRack or
  // kEquivalenceClass, keyed by a policy-chosen `key` (entity_id).
  NodeId EnsureAggregatorNode(NodeKind kind, uint64_t key);
  void RemoveAggregatorNode(NodeKind kind, uint64_t key);
  [[nodiscard]] NodeId FindAggregatorNode(NodeKind kind, uint64_t key) const;
  // Keys of the live aggregators of `kind`, in key order.
  [[nodiscard]] std::vector<uint64_t> AggregatorKeys(NodeKind kind) const;
  // A deterministic 64-bit key for a name (FNV-1a; never 0). Policies key
  // aggregators by it; a collision would merge two aggregators, which at
  // 64 bits and thousands of names is not a practical concern.
  static uint64_t StableKey(std::string_view name);
  // Creates the task node or updates its supply and running_on.
  NodeId EnsureTaskNode(TaskId task, int64_t supply, MachineId running_on);

  void RemoveJobNode(JobId job);
  void RemoveMachineNode(MachineId machine);
  void RemoveTaskNode(TaskId task);
  void RemoveRackNode(const std::string& rack);
  [[nodiscard]] NodeId FindRackNode(const std::string& rack) const {
    return FindAggregatorNode(NodeKind::kRack, StableKey(rack));
  }

  // Makes the out-arcs of `node` exactly `desired` (by destination).
  // REQUIRES: every destination is live and listed once.
  absl::Status SetOutArcs(NodeId node, const std::vector<DesiredArc>& desired);

  [[nodiscard]] NodeId sink() const { return sink_; }
  [[nodiscard]] NodeId cluster_aggregator() const { return cluster_agg_; }
  [[nodiscard]] NodeId FindJobNode(JobId job) const;
  [[nodiscard]] NodeId FindMachineNode(MachineId machine) const;
  [[nodiscard]] NodeId FindTaskNode(TaskId task) const;
  [[nodiscard]] size_t task_node_count() const { return tasks_.size(); }
  [[nodiscard]] FlowNetwork& network() { return network_; }
  [[nodiscard]] const FlowNetwork& network() const { return network_; }

 private:
  FlowNetwork& network_;
  NodeId sink_ = kNoNode;
  NodeId cluster_agg_ = kNoNode;
  absl::flat_hash_map<JobId, NodeId> jobs_;
  absl::flat_hash_map<MachineId, NodeId> machines_;
  absl::flat_hash_map<TaskId, NodeId> tasks_;
  std::map<std::pair<NodeKind, uint64_t>, NodeId> aggregators_;
};

}  // namespace flowsched::flow
