#include "services/core/policy_network.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/status_macros.h"
#include "services/flow/policy_spec.h"

namespace flowsched::core {

absl::Status PolicyNetwork::Adopt(std::string_view policy) {
  FLOWSCHED_ASSIGN_OR_RETURN(spec_, flow::CanonicalPolicySpec(policy));
  FLOWSCHED_ASSIGN_OR_RETURN(policy_, flow::MakePolicy(spec_));
  return builder_.RestoreFromNetwork();
}

absl::Status PolicyNetwork::Sync(const cluster::ChangeSet& changes,
                                 const cluster::ClusterState& state,
                                 int64_t now_us, bool refresh_follows) {
  if (changes.empty()) return absl::OkStatus();
  absl::Status synced = policy_->Sync(
      changes, state,
      flow::SyncContext{.now_us = now_us, .refresh_follows = refresh_follows},
      builder_);
  if (!synced.ok()) return PolicyError("update", synced);
  return absl::OkStatus();
}

absl::Status PolicyNetwork::Refresh(const cluster::ClusterState& state,
                                    int64_t now_us) {
  if (!policy_->time_dependent() && !policy_->refresh_owed()) {
    return absl::OkStatus();
  }
  absl::Status refreshed =
      policy_->Refresh(state, flow::SyncContext{now_us}, builder_);
  if (!refreshed.ok()) return PolicyError("refresh", refreshed);
  return absl::OkStatus();
}

absl::Status PolicyNetwork::SwitchPolicy(std::string_view spec,
                                         const cluster::ClusterState& state,
                                         int64_t now_us) {
  FLOWSCHED_ASSIGN_OR_RETURN(std::string canonical,
                             flow::CanonicalPolicySpec(spec));
  FLOWSCHED_ASSIGN_OR_RETURN(std::unique_ptr<flow::SchedulingPolicy> next,
                             flow::MakePolicy(canonical));
  std::vector<flow::NodeId> nodes;
  network_.ForEachNode(
      [&](flow::NodeId id, const flow::NodeData&) { nodes.push_back(id); });
  for (flow::NodeId id : nodes) {
    FLOWSCHED_RETURN_IF_ERROR(network_.RemoveNode(id));
  }
  FLOWSCHED_RETURN_IF_ERROR(builder_.RestoreFromNetwork());  // empty maps
  policy_ = std::move(next);
  spec_ = std::move(canonical);
  absl::Status built = policy_->Sync(EverythingIn(state), state,
                                     flow::SyncContext{now_us}, builder_);
  if (!built.ok()) return PolicyError("build", built);
  return absl::OkStatus();
}

absl::Status PolicyNetwork::PolicyError(std::string_view what,
                                        const absl::Status& status) const {
  return absl::InternalError(absl::StrCat("policy ", spec_, " failed to ",
                                          std::string(what),
                                          " the network: ", status.message()));
}

cluster::ChangeSet EverythingIn(const cluster::ClusterState& state) {
  cluster::ChangeSet everything;
  for (const auto& [id, job] : state.jobs()) everything.jobs.insert(id);
  for (const auto& [id, machine] : state.machines()) {
    everything.machines.insert(id);
  }
  for (const auto& [id, task] : state.tasks()) everything.tasks.insert(id);
  return everything;
}

}  // namespace flowsched::core
