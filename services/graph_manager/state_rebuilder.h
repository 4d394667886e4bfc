#pragma once

// What rebuilding the graph manager's state from the topics needs, apart
// from applying (which stays in GraphManager, so a replay runs exactly the
// code the original run did):
// - LedgerFence, LedgerHistory: the ledger topic read back as one history,
//   by seq, with epoch fencing applied;
// - EventFeed: events records by (partition, offset), in the order the
//   ledger asks for them;
// - MoveAside: a damaged state directory is renamed, never deleted.
//
// Thread-safety: not thread-safe; used by one thread at start.

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "flowsched/v1/ledger.pb.h"
#include "services/bus/record_source.h"
#include "services/common/strong_id.h"

namespace flowsched::graph_manager {

// The ledger's fencing rules without the records: which whole records
// (put together by LedgerAssembler) belong to the history. Records come in
// offset order; the first record of each seq counts (write-ahead
// re-publication duplicates), and an EpochClaim of epoch E at seq N
// supersedes every record of an older epoch with seq >= N, whenever it
// arrives (a deposed instance's tail that the new one never saw, or a
// zombie still writing). Keeps one seq -> epoch entry per record admitted
// (not the record), so a reader that keeps only some records (the clients)
// applies exactly the graph manager's rules.
class LedgerFence {
 public:
  // True if `record` belongs to the history (the caller keeps it); false if
  // it is superseded or its seq is taken (counted in ignored()). Seqs of
  // records admitted before and superseded now (by this record's claim) are
  // appended to `superseded`: the caller drops them.
  bool Admit(const v1::LedgerRecord& record, std::vector<uint64_t>* superseded);

  [[nodiscard]] bool Contains(uint64_t seq) const {
    return epochs_.contains(seq);
  }
  // The highest epoch any record or claim carried (fenced ones included:
  // a new epoch must exceed every epoch ever used).
  [[nodiscard]] GraphEpoch max_epoch() const { return max_epoch_; }
  // The highest claimed epoch, 0 without claims.
  [[nodiscard]] GraphEpoch claimed_epoch() const { return claimed_epoch_; }
  [[nodiscard]] uint64_t ignored() const { return ignored_; }

 private:
  // Seq -> epoch of the record admitted there.
  std::map<uint64_t, GraphEpoch> epochs_;
  // Claimed epoch -> the seq of its claim.
  std::map<GraphEpoch, uint64_t> claims_;
  GraphEpoch max_epoch_;
  GraphEpoch claimed_epoch_;
  uint64_t ignored_ = 0;
};

// The ledger as one history: every record LedgerFence admits, by seq.
class LedgerHistory {
 public:
  void Add(v1::LedgerRecord record);

  [[nodiscard]] const std::map<uint64_t, v1::LedgerRecord>& records() const {
    return records_;
  }
  [[nodiscard]] const v1::LedgerRecord* Find(uint64_t seq) const;
  [[nodiscard]] uint64_t max_seq() const {
    return records_.empty() ? 0 : records_.rbegin()->first;
  }
  [[nodiscard]] GraphEpoch max_epoch() const { return fence_.max_epoch(); }
  [[nodiscard]] GraphEpoch claimed_epoch() const {
    return fence_.claimed_epoch();
  }
  [[nodiscard]] uint64_t ignored() const { return fence_.ignored(); }

 private:
  LedgerFence fence_;
  std::map<uint64_t, v1::LedgerRecord> records_;
};

// Reads partition 0 of `topic` from its low to its high watermark (as of
// the call) into `history`, starting at `*next_offset` (kOffsetBeginning
// for all) and leaving it after the last record read. Unavailable if the
// broker does not deliver up to the watermark within `timeout_ms`.
absl::Status ReadLedger(bus::RecordSource& consumer, const std::string& topic,
                        int timeout_ms, int64_t* next_offset,
                        LedgerHistory& history);

// Hands out records of the events topic by (partition, offset), each
// partition in increasing offset order, buffering what a poll brings for
// other partitions.
class EventFeed {
 public:
  // `start`: first offset wanted per partition (others: from the beginning).
  EventFeed(bus::RecordSource& consumer, std::string topic, int32_t partitions,
            std::map<int32_t, int64_t> start, int timeout_ms);

  // DataLoss if the topic no longer holds `offset` (retention deleted it:
  // see "Topic settings" in services/bus/README.md); Unavailable if it does
  // not arrive in time.
  absl::StatusOr<bus::Record> Take(int32_t partition, int64_t offset);

 private:
  absl::Status EnsureAssigned();

  bus::RecordSource& consumer_;
  std::string topic_;
  int32_t partitions_;
  std::map<int32_t, int64_t> start_;
  int timeout_ms_;
  bool assigned_ = false;
  std::map<int32_t, std::deque<bus::Record>> buffers_;
};

// Renames `dir` to `<dir>.damaged-<UTC time>` (a new name if taken) and
// returns the new path. The operator decides what to do with it.
absl::StatusOr<std::string> MoveAside(const std::string& dir);

}  // namespace flowsched::graph_manager
