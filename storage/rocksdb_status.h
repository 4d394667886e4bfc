#pragma once

// Internal to storage/: the one place where rocksdb::Status becomes
// absl::Status. Not part of the public API (it includes a RocksDB header, and
// RocksDB is a private dependency of flowsched::storage).

#include <string_view>

#include "absl/status/status.h"
#include "rocksdb/status.h"

namespace flowsched::storage::internal {

// Corruption -> DataLoss; IOError, Busy, TryAgain, TimedOut -> Unavailable;
// InvalidArgument -> InvalidArgument; anything else -> Internal. NotFound is
// not an error for a key-value read, so callers handle it before calling this;
// if it gets here it maps to Internal because it then means something
// unexpected went missing. The message is "<context>: <RocksDB's message>".
absl::Status FromRocksDbStatus(const rocksdb::Status& status,
                               std::string_view context);

}  // namespace flowsched::storage::internal
