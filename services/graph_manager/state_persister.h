#pragma once

// Writes the graph manager's state into RocksDB batches and reads it back.
// One applied batch of Kafka records becomes one StateBatch holding the
// touched entities, the touched network nodes and arcs, the round
// bookkeeping and the consumed offsets, so a crash keeps all of it or none.

#include <vector>

#include "absl/status/status.h"
#include "flowsched/v1/state.pb.h"
#include "services/cluster/change_set.h"
#include "services/cluster/cluster_state.h"
#include "services/flow/flow_network.h"
#include "storage/state_store.h"

namespace flowsched::graph_manager {

// Stages the current value (or the deletion) of every entity in `changes`.
void StageEntities(const cluster::ChangeSet& changes,
                   const cluster::ClusterState& state,
                   storage::StateBatch& batch);

// Stages the current value (or the deletion) of every node and arc that
// `network_changes` touched.
void StageNetwork(const std::vector<flow::GraphChange>& network_changes,
                  const flow::FlowNetwork& network, storage::StateBatch& batch);

void StageMeta(const v1::GraphManagerMeta& meta, storage::StateBatch& batch);

// Loads everything a previous instance stored. An empty store yields an
// empty state. Derived state is rebuilt, not read: each machine's running
// set and allocated resources come from its restored tasks, the state's
// clock from meta.last_time_us. DataLoss names the first record that does
// not decode or does not fit (a task of an unknown job, an arc at an
// unknown node); the state's first if both fail. The network is read on a
// second thread beside the state.
absl::Status RestoreState(const storage::StateStore& store,
                          cluster::ClusterState& state,
                          flow::FlowNetwork& network,
                          v1::GraphManagerMeta& meta);

}  // namespace flowsched::graph_manager
