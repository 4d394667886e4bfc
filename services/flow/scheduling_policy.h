#pragma once

// A scheduling policy (cost model) turns changes of the cluster state into
// changes of the flow network: which nodes and arcs exist and what they
// cost. One policy per file; the graph manager picks one by name.
//
// Contract: after Sync (and Refresh, while refresh_owed()), every task in
// the state has a node with supply 1 and a path to the sink through its
// job's unscheduled aggregator, the sink drains every unit, and no arc lets
// a machine take more tasks than it has slots.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/cluster/change_set.h"
#include "services/cluster/cluster_state.h"
#include "services/flow/network_builder.h"

namespace flowsched::flow {

// What a policy may know about the moment it prices the network.
struct SyncContext {
  // The graph manager's clock at the call. Time-dependent costs (Quincy's
  // wait cost omega*nu and running cost d* - theta, SOSP 2009 section 4.2)
  // are evaluated at this time.
  int64_t now_us = 0;
  // The caller calls Refresh before the network is next solved, published
  // or read as the problem a solve would see (the graph manager syncs every
  // batch of events but cuts a round far less often; `flowsched explain`
  // refreshes the stored network it reads). A policy may then leave to that
  // Refresh the parts only a solve needs whose cost does not follow the change
  // (the room reservations of request_shapes.h walk the machines), and says so
  // through refresh_owed().
  bool refresh_follows = false;
};

class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;

  // Re-derives the parts of the network that `changes` touched.
  // Entities named in `changes` that are gone from `state` are removed.
  // REQUIRES: after the first Sync, every change to `state` is named in
  // some later `changes` (a policy may keep what it derived from them).
  // Returns Internal if the network rejects an edit (a policy bug).
  virtual absl::Status Sync(const cluster::ChangeSet& changes,
                            const cluster::ClusterState& state,
                            const SyncContext& context,
                            NetworkBuilder& builder) = 0;

  // Transitional form for callers without a clock: uses the latest time the
  // state has seen. Derived classes re-export it with `using`.
  absl::Status Sync(const cluster::ChangeSet& changes,
                    const cluster::ClusterState& state,
                    NetworkBuilder& builder) {
    return Sync(changes, state, SyncContext{state.last_time_us()}, builder);
  }

  // True if arcs (their costs, or the room reserved on them) change with
  // time alone. The graph manager then calls Refresh right before it cuts
  // each round.
  [[nodiscard]] virtual bool time_dependent() const { return false; }

  // True while the network lacks work a Sync left to Refresh
  // (SyncContext::refresh_follows), or a fresh policy has not derived the
  // parts it keeps over a network it was handed (a restored one): the
  // caller must call Refresh before the network is solved or published,
  // time-dependent or not.
  [[nodiscard]] virtual bool refresh_owed() const { return false; }

  // Re-derives every time-dependent arc at `context.now_us`, and whatever
  // refresh_owed() says is missing. Only real changes are recorded, so a
  // refresh with nothing to re-price is free.
  // REQUIRES: the network is in sync with `state` (Sync ran for every
  // change), or is a restored network this fresh policy never synced (it
  // then derives what its first Sync would).
  virtual absl::Status Refresh(const cluster::ClusterState& state,
                               const SyncContext& context,
                               NetworkBuilder& builder) {
    (void)state;
    (void)context;
    (void)builder;
    return absl::OkStatus();
  }
};

// Every name MakePolicy knows, the default ("load-spreading") first.
std::vector<std::string> PolicyNames();

// Creates a policy from its spec, "NAME" or "NAME:key=value,..." (see
// policy_spec.h; policy_registry.cc lists the names and their tunables).
// InvalidArgument as ParsePolicySpec says why the spec is refused.
absl::StatusOr<std::unique_ptr<SchedulingPolicy>> MakePolicy(
    std::string_view spec);

}  // namespace flowsched::flow
