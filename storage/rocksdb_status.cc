#include "storage/rocksdb_status.h"

#include <string>

#include "fmt/format.h"

namespace flowsched::storage::internal {

absl::Status FromRocksDbStatus(const rocksdb::Status& status,
                               std::string_view context) {
  if (status.ok()) return absl::OkStatus();
  const std::string message = fmt::format("{}: {}", context, status.ToString());
  if (status.IsCorruption()) return absl::DataLossError(message);
  if (status.IsIOError() || status.IsBusy() || status.IsTryAgain() ||
      status.IsTimedOut()) {
    return absl::UnavailableError(message);
  }
  if (status.IsInvalidArgument()) return absl::InvalidArgumentError(message);
  return absl::InternalError(message);
}

}  // namespace flowsched::storage::internal
