#include "services/graph_manager/state_reader.h"

#include <string_view>
#include <utility>

#include "services/common/status_macros.h"
#include "services/graph_manager/state_digest.h"
#include "services/graph_manager/state_persister.h"
#include "services/graph_manager/state_records.h"
#include "storage/keys.h"

namespace flowsched::graph_manager {

absl::StatusOr<std::unique_ptr<StateReader>> StateReader::Open(
    const std::string& data_dir) {
  storage::StateStore::OpenOptions open;
  open.read_only = true;
  open.create_if_missing = false;
  FLOWSCHED_ASSIGN_OR_RETURN(
      auto store, storage::StateStore::Open(data_dir + "/state", open));
  return std::unique_ptr<StateReader>(new StateReader(std::move(store)));
}

absl::StatusOr<StoredState> StateReader::Load() const {
  StoredState stored;
  FLOWSCHED_RETURN_IF_ERROR(
      RestoreState(*store_, stored.state, stored.network, stored.meta));
  return stored;
}

absl::StatusOr<std::string> StateReader::Digest() const {
  FLOWSCHED_ASSIGN_OR_RETURN(const StoredState stored, Load());
  return StateDigest(stored.state, stored.network);
}

absl::Status StateReader::ForEachTask(
    const std::function<absl::Status(const cluster::Task&)>& visit) const {
  return store_->ScanPrefix(
      storage::kTaskPrefix, [&](std::string_view, std::string_view value) {
        FLOWSCHED_ASSIGN_OR_RETURN(const cluster::Task task, DecodeTask(value));
        return visit(task);
      });
}

absl::Status StateReader::ForEachMachine(
    const std::function<absl::Status(const cluster::Machine&)>& visit) const {
  return store_->ScanPrefix(
      storage::kMachinePrefix, [&](std::string_view, std::string_view value) {
        FLOWSCHED_ASSIGN_OR_RETURN(const cluster::Machine machine,
                                   DecodeMachine(value));
        return visit(machine);
      });
}

}  // namespace flowsched::graph_manager
