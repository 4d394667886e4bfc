#pragma once

// The flow network and the policy that keeps it in step with the cluster
// state: the one path by which state changes become network changes, shared
// by the graph manager (and its replay) and the simulator.
//
// Errors from the policy are reported as Internal with the policy's name:
// a policy that cannot express a valid state is a bug, and the caller's
// memory is then ahead of anything it persisted.
//
// Thread-safety: none. Not movable (the builder refers to the network).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "services/cluster/change_set.h"
#include "services/cluster/cluster_state.h"
#include "services/flow/flow_network.h"
#include "services/flow/network_builder.h"
#include "services/flow/scheduling_policy.h"

namespace flowsched::core {

class PolicyNetwork {
 public:
  PolicyNetwork() = default;
  PolicyNetwork(const PolicyNetwork&) = delete;
  PolicyNetwork& operator=(const PolicyNetwork&) = delete;

  // Takes `policy` (a spec, flow::MakePolicy) as the one that built the
  // current network (empty, or restored from storage into network()).
  // InvalidArgument for a spec MakePolicy refuses; DataLoss if the
  // network's nodes do not map to entities.
  absl::Status Adopt(std::string_view policy);

  // Lets the policy turn `changes` into network changes, pricing at
  // `now_us`. With `refresh_follows` the caller promises a Refresh before
  // the network is next solved or published, and the policy may leave work
  // to it (flow::SyncContext). REQUIRES: a policy was adopted.
  absl::Status Sync(const cluster::ChangeSet& changes,
                    const cluster::ClusterState& state, int64_t now_us,
                    bool refresh_follows = false);

  // Re-prices time-dependent arcs at `now_us` and does what refresh_owed()
  // says is missing (a no-op otherwise).
  absl::Status Refresh(const cluster::ClusterState& state, int64_t now_us);

  // Whether the network lacks work left to Refresh (a policy's
  // refresh_owed()), so that it is not yet what a solve should see.
  // REQUIRES: a policy was adopted.
  [[nodiscard]] bool refresh_owed() const { return policy_->refresh_owed(); }

  // Replaces the policy and rebuilds the whole network under it: every
  // node removed, every entity of `state` synced again. Rebuilding from
  // empty is the one transition right for every pair of policies (their
  // aggregators differ). The removals and additions are recorded like any
  // change. InvalidArgument for a refused spec (nothing changed);
  // Internal if the new policy fails to build the network.
  absl::Status SwitchPolicy(std::string_view spec,
                            const cluster::ClusterState& state, int64_t now_us);

  [[nodiscard]] bool has_policy() const { return policy_ != nullptr; }
  // REQUIRES: has_policy().
  [[nodiscard]] const flow::SchedulingPolicy& policy() const {
    return *policy_;
  }
  // The canonical spec of the policy (flow::FormatPolicySpec): its
  // identity in the store and the ledger. Empty before Adopt.
  [[nodiscard]] const std::string& spec() const { return spec_; }
  [[nodiscard]] flow::FlowNetwork& network() { return network_; }
  [[nodiscard]] const flow::FlowNetwork& network() const { return network_; }
  [[nodiscard]] const flow::NetworkBuilder& builder() const { return builder_; }

 private:
  absl::Status PolicyError(std::string_view what,
                           const absl::Status& status) const;

  flow::FlowNetwork network_;
  flow::NetworkBuilder builder_{network_};
  std::unique_ptr<flow::SchedulingPolicy> policy_;
  std::string spec_;
};

// Every job, machine and task of `state`: what a full rebuild syncs.
cluster::ChangeSet EverythingIn(const cluster::ClusterState& state);

}  // namespace flowsched::core
