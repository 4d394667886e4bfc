#include "services/flow/network_builder.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"

namespace flowsched::flow {

absl::Status NetworkBuilder::RestoreFromNetwork() {
  sink_ = cluster_agg_ = kNoNode;
  jobs_.clear();
  machines_.clear();
  tasks_.clear();
  aggregators_.clear();
  absl::Status status;
  network_.ForEachNode([&](NodeId id, const NodeData& data) {
    if (!status.ok()) return;
    bool unique = true;
    switch (data.kind) {
      case NodeKind::kSink:
        unique = sink_ == kNoNode;
        sink_ = id;
        break;
      case NodeKind::kClusterAggregator:
        unique = cluster_agg_ == kNoNode;
        cluster_agg_ = id;
        break;
      case NodeKind::kJobUnscheduled:
        unique = jobs_.emplace(JobId(data.entity_id), id).second;
        break;
      case NodeKind::kMachine:
        unique = machines_.emplace(MachineId(data.entity_id), id).second;
        break;
      case NodeKind::kTask:
        unique = tasks_.emplace(TaskId(data.entity_id), id).second;
        break;
      case NodeKind::kRack:
      case NodeKind::kEquivalenceClass:
        unique = aggregators_.emplace(std::pair(data.kind, data.entity_id), id)
                     .second;
        break;
      default:
        break;
    }
    if (!unique) {
      status = absl::DataLossError(
          absl::StrCat("restored network has a second node for kind ",
                       static_cast<int>(data.kind), " entity ", data.entity_id,
                       " (node ", id, ")"));
    }
  });
  return status;
}

NodeId NetworkBuilder::EnsureSink() {
  if (sink_ == kNoNode) sink_ = network_.AddNode({.kind = NodeKind::kSink});
  return sink_;
}

NodeId NetworkBuilder::EnsureClusterAggregator() {
  if (cluster_agg_ == kNoNode) {
    cluster_agg_ = network_.AddNode({.kind = NodeKind::kClusterAggregator});
  }
  return cluster_agg_;
}

NodeId NetworkBuilder::EnsureJobNode(JobId job) {
  auto [it, inserted] = jobs_.try_emplace(job, kNoNode);
  if (inserted) {
    it->second = network_.AddNode(
        {.kind = NodeKind::kJobUnscheduled, .entity_id = job.value()});
  }
  return it->second;
}

NodeId NetworkBuilder::EnsureMachineNode(MachineId machine) {
  auto [it, inserted] = machines_.try_emplace(machine, kNoNode);
  if (inserted) {
    it->second = network_.AddNode(
        {.kind = NodeKind::kMachine, .entity_id = machine.value()});
  }
  return it->second;
}

NodeId NetworkBuilder::EnsureRackNode(const std::string& rack) {
  return EnsureAggregatorNode(NodeKind::kRack, StableKey(rack));
}

NodeId NetworkBuilder::EnsureAggregatorNode(NodeKind kind, uint64_t key) {
  auto [it, inserted] = aggregators_.try_emplace(std::pair(kind, key), kNoNode);
  if (inserted) {
    it->second = network_.AddNode({.kind = kind, .entity_id = key});
  }
  return it->second;
}

void NetworkBuilder::RemoveAggregatorNode(NodeKind kind, uint64_t key) {
  auto it = aggregators_.find(std::pair(kind, key));
  if (it == aggregators_.end()) return;
  network_.RemoveNode(it->second).IgnoreError();  // live by construction
  aggregators_.erase(it);
}

NodeId NetworkBuilder::FindAggregatorNode(NodeKind kind, uint64_t key) const {
  auto it = aggregators_.find(std::pair(kind, key));
  return it == aggregators_.end() ? kNoNode : it->second;
}

std::vector<uint64_t> NetworkBuilder::AggregatorKeys(NodeKind kind) const {
  std::vector<uint64_t> keys;
  for (auto it = aggregators_.lower_bound(std::pair(kind, uint64_t{0}));
       it != aggregators_.end() && it->first.first == kind; ++it) {
    keys.push_back(it->first.second);
  }
  return keys;
}

uint64_t NetworkBuilder::StableKey(std::string_view name) {
  uint64_t hash = 14695981039346656037ull;
  for (char c : name) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 1099511628211ull;
  }
  return hash == 0 ? 1 : hash;
}

NodeId NetworkBuilder::EnsureTaskNode(TaskId task, int64_t supply,
                                      MachineId running_on) {
  auto [it, inserted] = tasks_.try_emplace(task, kNoNode);
  if (inserted) {
    it->second = network_.AddNode({.kind = NodeKind::kTask,
                                   .supply = supply,
                                   .entity_id = task.value(),
                                   .running_on = running_on.value()});
  } else {
    // The node is live by construction of the map.
    network_.UpdateNode(it->second, supply, running_on.value()).IgnoreError();
  }
  return it->second;
}

void NetworkBuilder::RemoveJobNode(JobId job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  network_.RemoveNode(it->second).IgnoreError();  // live by construction
  jobs_.erase(it);
}

void NetworkBuilder::RemoveMachineNode(MachineId machine) {
  auto it = machines_.find(machine);
  if (it == machines_.end()) return;
  network_.RemoveNode(it->second).IgnoreError();  // live by construction
  machines_.erase(it);
}

void NetworkBuilder::RemoveTaskNode(TaskId task) {
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return;
  network_.RemoveNode(it->second).IgnoreError();  // live by construction
  tasks_.erase(it);
}

void NetworkBuilder::RemoveRackNode(const std::string& rack) {
  RemoveAggregatorNode(NodeKind::kRack, StableKey(rack));
}

absl::Status NetworkBuilder::SetOutArcs(
    NodeId node, const std::vector<DesiredArc>& desired) {
  return network_.SetOutArcs(node, desired);
}

NodeId NetworkBuilder::FindJobNode(JobId job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? kNoNode : it->second;
}
NodeId NetworkBuilder::FindMachineNode(MachineId machine) const {
  auto it = machines_.find(machine);
  return it == machines_.end() ? kNoNode : it->second;
}
NodeId NetworkBuilder::FindTaskNode(TaskId task) const {
  auto it = tasks_.find(task);
  return it == tasks_.end() ? kNoNode : it->second;
}

}  // namespace flowsched::flow
