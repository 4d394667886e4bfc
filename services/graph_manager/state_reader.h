#pragma once

// Read-only access to a graph manager's data directory, for tools
// (`flowsched inspect`, `flowsched explain`): the records are decoded by the
// graph manager's own code, so their format (state_records.h,
// state_persister.h, the storage key families) stays private to it.
//
// The store is opened with RocksDB's read-only mode: no lock is taken and
// nothing is written, so a reader works beside a running graph manager (it
// sees the state as of its open) or after it stopped.
//
// Thread-safety: const methods may be called concurrently.

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "flowsched/v1/state.pb.h"
#include "services/cluster/cluster_state.h"
#include "services/cluster/cluster_types.h"
#include "services/flow/flow_network.h"
#include "storage/state_store.h"

namespace flowsched::graph_manager {

// What a graph manager restores at its start.
struct StoredState {
  cluster::ClusterState state;
  flow::FlowNetwork network;
  v1::GraphManagerMeta meta;
};

class StateReader {
 public:
  // Opens `<data_dir>/state`. Returns the store's error: NotFound when
  // there is none, DataLoss when it is damaged, Unavailable when it cannot
  // be read.
  static absl::StatusOr<std::unique_ptr<StateReader>> Open(
      const std::string& data_dir);

  // Cluster state, network and meta, as a restart would restore them
  // (RestoreState). DataLoss names the first record that does not decode or
  // does not fit.
  [[nodiscard]] absl::StatusOr<StoredState> Load() const;

  // The state digest a restart of this directory will report (StateDigest
  // of what Load() returns).
  [[nodiscard]] absl::StatusOr<std::string> Digest() const;

  // Calls `visit` for each stored task (machine) in id order; stops at the
  // first error, a record that does not decode (DataLoss) or what `visit`
  // returned.
  absl::Status ForEachTask(
      const std::function<absl::Status(const cluster::Task&)>& visit) const;
  absl::Status ForEachMachine(
      const std::function<absl::Status(const cluster::Machine&)>& visit) const;

 private:
  explicit StateReader(std::unique_ptr<storage::StateStore> store)
      : store_(std::move(store)) {}

  std::unique_ptr<storage::StateStore> store_;
};

}  // namespace flowsched::graph_manager
