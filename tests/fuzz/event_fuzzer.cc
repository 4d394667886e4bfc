// libFuzzer target over everything a Kafka record on the events topic goes
// through in the graph manager: decode, validate, apply to the cluster
// state, let the policy update the network, stage the RocksDB records and
// compute the digest. Any crash, sanitizer report or broken invariant is a
// finding. The input is split into records at 0xFF 0x00 separators so that
// sequences of events (submit, then finish, ...) are explored too.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "services/cluster/cluster_state.h"
#include "services/cluster/event_decoder.h"
#include "services/flow/load_spreading_policy.h"
#include "services/flow/network_builder.h"
#include "services/graph_manager/state_digest.h"
#include "services/graph_manager/state_persister.h"

namespace {

using flowsched::cluster::ChangeSet;

void Check(bool condition) {
  if (!condition) std::abort();  // an invariant broke: report as a crash
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  flowsched::cluster::ValidationLimits limits;
  limits.max_tasks_per_job = 1000;  // keep single inputs cheap
  const flowsched::cluster::EventDecoder decoder(limits);
  flowsched::cluster::ClusterState state(limits);
  flowsched::flow::FlowNetwork network;
  network.set_record_changes(true);
  flowsched::flow::NetworkBuilder builder(network);
  flowsched::flow::LoadSpreadingPolicy policy;

  std::string_view input(reinterpret_cast<const char*>(data), size);
  while (true) {
    const size_t cut = input.find(std::string_view("\xff\x00", 2));
    const std::string_view record = input.substr(0, cut);
    auto event = decoder.Decode(record);
    if (event.ok()) {
      ChangeSet changes;
      const size_t tasks_before = state.tasks().size();
      if (state.Apply(*event, 1000, changes).ok()) {
        Check(policy.Sync(changes, state, builder).ok());
        flowsched::storage::StateBatch batch;
        flowsched::graph_manager::StageEntities(changes, state, batch);
        flowsched::graph_manager::StageNetwork(network.TakeChanges(), network,
                                               batch);
      } else {
        // A rejected event changes nothing.
        Check(changes.empty());
        Check(state.tasks().size() == tasks_before);
      }
      // Invariants of state and network after every record.
      Check(network.total_supply() == 0);
      Check(state.running_task_count() <= state.tasks().size());
      for (const auto& [id, machine] : state.machines()) {
        Check(machine.running.size() <= machine.task_slots);
      }
      // Place the first waiting task on the first machine that takes it, as
      // a round would. A machine with a free slot may still lack CPU or
      // memory: that refusal must be FailedPrecondition and change nothing.
      for (const auto& [task_id, task] : state.tasks()) {
        if (task.running()) continue;
        for (const auto& [machine_id, machine] : state.machines()) {
          if (machine.free_slots() == 0) continue;
          ChangeSet placed;
          const size_t running_before = state.running_task_count();
          const absl::Status status =
              state.Place(task_id, machine_id, 2000, placed);
          if (!status.ok()) {
            Check(status.code() == absl::StatusCode::kFailedPrecondition);
            Check(placed.empty());
            Check(state.running_task_count() == running_before);
            continue;
          }
          Check(policy.Sync(placed, state, builder).ok());
          network.TakeChanges();
          break;
        }
        break;
      }
    }
    if (cut == std::string_view::npos) break;
    input.remove_prefix(cut + 2);
  }
  Check(flowsched::graph_manager::StateDigest(state, network).size() == 32);
  return 0;
}
