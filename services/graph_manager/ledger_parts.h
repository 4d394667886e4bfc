#pragma once

// Ledger records larger than a broker message (a round that applied tens of
// thousands of decisions; brokers refuse records of more than ~1 MB by
// default) travel as several records of the same seq, each a slice of the
// whole serialized record (LedgerRecord.part / part_count / part_bytes).
// SplitLedgerRecord cuts, LedgerAssembler puts them together again. Slices
// may arrive more than once (write-ahead re-publication after a crash) and
// interleaved with such duplicates; the first copy of each slice counts.
//
// Thread-safety: LedgerAssembler is not thread-safe.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "flowsched/v1/ledger.pb.h"
#include "services/common/strong_id.h"

namespace flowsched::graph_manager {

// Kept well under the brokers' default 1,000,000-byte message limit, like
// rounds (GraphManagerOptions::max_round_record_bytes).
inline constexpr size_t kMaxLedgerRecordBytes = 512 * 1024;

// The records to publish for `serialized` (a whole LedgerRecord of `seq`
// written by `epoch`): itself if it fits in `max_bytes`, else its slices.
// Slices carry the epoch because two instances (a fenced one and its
// successor) may both write a large record at one seq: their slices must
// not be mixed.
std::vector<std::string> SplitLedgerRecord(
    std::string serialized, uint64_t seq, GraphEpoch epoch,
    size_t max_bytes = kMaxLedgerRecordBytes);

class LedgerAssembler {
 public:
  // Takes one record as read from the ledger topic. Returns the whole record
  // when `record` is one (unsplit) or completes one; nullopt while slices
  // are missing, and for a slice set that does not parse (logged).
  std::optional<v1::LedgerRecord> Add(v1::LedgerRecord record);

  // Records with slices still missing.
  [[nodiscard]] size_t incomplete() const { return partial_.size(); }

 private:
  struct Partial {
    uint32_t count = 0;
    std::map<uint32_t, std::string> slices;
  };
  // By (seq, epoch of the writer).
  std::map<std::pair<uint64_t, GraphEpoch>, Partial> partial_;
  // Already assembled: late duplicate slices of these are dropped instead
  // of starting a set that would never complete.
  std::set<std::pair<uint64_t, GraphEpoch>> assembled_;
};

}  // namespace flowsched::graph_manager
