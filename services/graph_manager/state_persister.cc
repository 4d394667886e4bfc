#include "services/graph_manager/state_persister.h"

#include <algorithm>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/codec/round_codec.h"
#include "services/common/status_macros.h"
#include "services/graph_manager/state_records.h"
#include "storage/keys.h"

namespace flowsched::graph_manager {
namespace {

constexpr std::string_view kMetaName = "graph_manager";

}  // namespace

void StageEntities(const cluster::ChangeSet& changes,
                   const cluster::ClusterState& state,
                   storage::StateBatch& batch) {
  for (JobId id : changes.jobs) {
    const cluster::Job* job = state.FindJob(id);
    const std::string key = storage::JobKey(id.value());
    if (job == nullptr) {
      batch.Delete(key);
    } else {
      batch.Put(key, EncodeJob(*job));
    }
  }
  for (TaskId id : changes.tasks) {
    const cluster::Task* task = state.FindTask(id);
    const std::string key = storage::TaskKey(id.value());
    if (task == nullptr) {
      batch.Delete(key);
    } else {
      batch.Put(key, EncodeTask(*task));
    }
  }
  for (MachineId id : changes.machines) {
    const cluster::Machine* machine = state.FindMachine(id);
    const std::string key = storage::MachineKey(id.value());
    if (machine == nullptr) {
      batch.Delete(key);
    } else {
      batch.Put(key, EncodeMachine(*machine));
    }
  }
}

void StageNetwork(const std::vector<flow::GraphChange>& network_changes,
                  const flow::FlowNetwork& network,
                  storage::StateBatch& batch) {
  // Each node and arc once, in key order, whatever the changes' order.
  std::vector<flow::NodeId> nodes;
  std::vector<std::pair<flow::NodeId, flow::NodeId>> arcs;
  for (const flow::GraphChange& change : network_changes) {
    switch (change.type) {
      case flow::GraphChange::Type::kAddNode:
      case flow::GraphChange::Type::kUpdateNode:
        nodes.push_back(change.node);
        break;
      case flow::GraphChange::Type::kRemoveNode:
        // Its arcs were recorded as kRemoveArc just before.
        nodes.push_back(change.node);
        break;
      case flow::GraphChange::Type::kSetArc:
      case flow::GraphChange::Type::kRemoveArc:
        arcs.emplace_back(change.src, change.dst);
        break;
    }
  }
  const auto sort_unique = [](auto& keys) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  };
  sort_unique(nodes);
  sort_unique(arcs);
  for (flow::NodeId id : nodes) {
    if (network.IsLive(id)) {
      v1::NodeRecord record;
      codec::EncodeNode(id, network.node(id), *record.mutable_node());
      batch.Put(storage::NodeKey(id), record.SerializeAsString());
    } else {
      batch.Delete(storage::NodeKey(id));
    }
  }
  for (const auto& [src, dst] : arcs) {
    auto arc = network.FindArc(src, dst);
    if (arc.has_value()) {
      v1::ArcRecord record;
      record.mutable_arc()->set_src(src);
      record.mutable_arc()->set_dst(dst);
      record.mutable_arc()->set_capacity(arc->capacity);
      record.mutable_arc()->set_cost(arc->cost);
      for (const flow::ArcSegment& piece : arc->extra_segments) {
        v1::ArcSegment* out = record.mutable_arc()->add_extra_segments();
        out->set_capacity(piece.capacity);
        out->set_cost(piece.cost);
      }
      batch.Put(storage::ArcKey(src, dst), record.SerializeAsString());
    } else {
      batch.Delete(storage::ArcKey(src, dst));
    }
  }
}

void StageMeta(const v1::GraphManagerMeta& meta, storage::StateBatch& batch) {
  batch.Put(storage::MetaKey(kMetaName), meta.SerializeAsString());
}

namespace {

absl::Status RestoreEntities(const storage::StateStore& store,
                             cluster::ClusterState& state) {
  FLOWSCHED_RETURN_IF_ERROR(store.ScanPrefix(
      storage::kJobPrefix, [&](std::string_view, std::string_view value) {
        FLOWSCHED_ASSIGN_OR_RETURN(cluster::Job job, DecodeJob(value));
        return state.RestoreJob(std::move(job));
      }));
  FLOWSCHED_RETURN_IF_ERROR(store.ScanPrefix(
      storage::kMachinePrefix, [&](std::string_view, std::string_view value) {
        FLOWSCHED_ASSIGN_OR_RETURN(cluster::Machine machine,
                                   DecodeMachine(value));
        return state.RestoreMachine(std::move(machine));
      }));
  return store.ScanPrefix(
      storage::kTaskPrefix, [&](std::string_view, std::string_view value) {
        FLOWSCHED_ASSIGN_OR_RETURN(cluster::Task task, DecodeTask(value));
        return state.RestoreTask(std::move(task));
      });
}

absl::Status RestoreNetwork(const storage::StateStore& store,
                            flow::FlowNetwork& network) {
  FLOWSCHED_RETURN_IF_ERROR(store.ScanPrefix(
      storage::kNodePrefix, [&](std::string_view key, std::string_view value) {
        v1::NodeRecord record;
        if (!record.ParseFromArray(value.data(),
                                   static_cast<int>(value.size()))) {
          return absl::DataLossError(absl::StrCat(
              "stored node record does not parse (key size ", key.size(), ")"));
        }
        auto change = codec::DecodeNodeAsAdd(record.node());
        if (!change.ok()) {
          return absl::DataLossError(absl::StrCat("stored node is invalid: ",
                                                  change.status().message()));
        }
        return network.Apply(*change);
      }));
  return store.ScanPrefix(storage::kArcPrefix, [&](std::string_view,
                                                   std::string_view value) {
    v1::ArcRecord record;
    if (!record.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      return absl::DataLossError("stored arc record does not parse");
    }
    const v1::Arc& arc = record.arc();
    std::vector<flow::ArcSegment> pieces;
    for (const v1::ArcSegment& piece : arc.extra_segments()) {
      pieces.push_back({piece.capacity(), piece.cost()});
    }
    absl::Status status = network.SetArc(arc.src(), arc.dst(), arc.capacity(),
                                         arc.cost(), pieces);
    if (!status.ok()) {
      return absl::DataLossError(
          absl::StrCat("stored arc ", arc.src(), "->", arc.dst(),
                       " does not fit the stored nodes: ", status.message()));
    }
    return absl::OkStatus();
  });
}

}  // namespace

absl::Status RestoreState(const storage::StateStore& store,
                          cluster::ClusterState& state,
                          flow::FlowNetwork& network,
                          v1::GraphManagerMeta& meta) {
  FLOWSCHED_ASSIGN_OR_RETURN(auto meta_bytes,
                             store.Get(storage::MetaKey(kMetaName)));
  if (meta_bytes.has_value() && !meta.ParseFromString(*meta_bytes)) {
    return absl::DataLossError("stored graph manager meta does not parse");
  }
  state.AdvanceTime(meta.last_time_us());
  // The state and the network share nothing: read them side by side (a
  // restart's readiness at 50,000 machines is these two scans; RocksDB
  // reads are thread-safe).
  absl::Status network_restored;
  std::thread network_reader(
      [&] { network_restored = RestoreNetwork(store, network); });
  const absl::Status state_restored = RestoreEntities(store, state);
  network_reader.join();
  FLOWSCHED_RETURN_IF_ERROR(state_restored);
  return network_restored;
}

}  // namespace flowsched::graph_manager
