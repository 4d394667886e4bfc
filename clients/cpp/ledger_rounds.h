#pragma once

// LedgerRounds: the ledger topic as the rounds the graph manager applied,
// for the clients (RoundAssembler), the C++ twin of LedgerRounds in
// clients/python/flowsched_client/assembler.py. Records are put together
// by the graph manager's own LedgerAssembler and judged by its own
// LedgerFence (first record of each seq, EpochClaim fencing), so a round
// counts here exactly when it counts for the graph manager; only the
// RoundApplied steps are kept, not the records, and the owner forgets
// them once settled (ForgetThrough, Erase). Must be fed the ledger from
// its beginning: the claims that fence can be anywhere in it.
// Not thread-safe.

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "flowsched/v1/ledger.pb.h"
#include "services/graph_manager/ledger_parts.h"
#include "services/graph_manager/state_rebuilder.h"

namespace flowsched::client {

class LedgerRounds {
 public:
  struct Applied {
    uint64_t seq = 0;     // of the ledger record
    int64_t offset = -1;  // where the record completed (-1: not given)
    v1::RoundApplied round;
  };
  using Key = std::pair<uint64_t, uint64_t>;  // round id, graph epoch

  // only_stale: keep only the RoundApplied that reject a decision.
  explicit LedgerRounds(bool only_stale = false) : only_stale_(only_stale) {}

  // Records completing below `offset` still count for fencing, but their
  // rounds are not kept (they were settled by an earlier reader).
  void set_floor(int64_t offset) { floor_ = offset; }

  // One record as read from the ledger topic at `offset` (-1: unknown).
  void Add(v1::LedgerRecord record, int64_t offset = -1);

  [[nodiscard]] const Applied* Find(uint64_t round_id,
                                    uint64_t graph_epoch) const;
  void Erase(const Key& key) { rounds_.erase(key); }
  // Forgets every round up to `round_id`.
  void ForgetThrough(uint64_t round_id);

  // By (round id, graph epoch).
  [[nodiscard]] const std::map<Key, Applied>& rounds() const { return rounds_; }
  [[nodiscard]] uint64_t ignored() const { return fence_.ignored(); }

 private:
  bool only_stale_;
  int64_t floor_ = -1;
  graph_manager::LedgerAssembler parts_;
  graph_manager::LedgerFence fence_;
  std::map<Key, Applied> rounds_;
};

}  // namespace flowsched::client
