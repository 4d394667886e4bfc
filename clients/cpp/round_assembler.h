#pragma once

// RoundAssembler: the placements topic's consumer contract as pure logic
// (no I/O), the C++ twin of clients/python/flowsched_client/assembler.py
// Feed it every record read, with its partition and offset; it returns
// complete rounds in the order they completed, and only:
// - answers (round id, graph epoch, worker epoch) whose every partition's
//   RoundComplete arrived and whose per-partition decision counts match;
// - answered by the worker the round was addressed to (solver_epoch) and
//   by the current solver epoch (latest ResyncRequest, else the first
//   delivered round's); not of a graph epoch older than one delivered;
// - round ids above the last delivered one, without decisions whose
//   idempotency key was already delivered (last `remember_rounds` rounds).
// Commit(round) once the caller acted; HeldOffsets() tells how far offsets
// may be committed. With confirm_with_ledger, also fed the ledger topic
// from its beginning (AddLedger: slices put together and seqs fenced by the
// graph manager's own LedgerAssembler and LedgerHistory), a complete answer
// is returned only once its RoundApplied is known: the applied decisions
// (the graph manager's copies) in `decisions`, the rejected ones with their
// reason in `stale`. Not thread-safe.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "flowsched/v1/ledger.pb.h"
#include "flowsched/v1/placements.pb.h"
#include "services/graph_manager/ledger_parts.h"
#include "services/graph_manager/state_rebuilder.h"

namespace flowsched::client {

struct Round {
  uint64_t round_id = 0;
  uint64_t graph_epoch = 0;
  uint64_t solver_epoch = 0;                     // the worker that answered
  std::vector<v1::PlacementDecision> decisions;  // by partition, read order
  v1::RoundComplete summary;  // partition 0's marker (cost, counts)
  // Ledger mode: decisions the graph manager rejected, with the reason;
  // never in `decisions`. Empty otherwise.
  std::vector<std::pair<v1::PlacementDecision, std::string>> stale;
  bool confirmed_by_ledger = false;
};

struct AssemblerStats {
  uint64_t records = 0;
  uint64_t rounds_delivered = 0;
  uint64_t decisions_delivered = 0;
  uint64_t stale_decisions = 0;    // ledger mode: rejected by the graph manager
  uint64_t fenced_records = 0;     // other solver/graph epoch, not addressed
  uint64_t duplicate_records = 0;  // key or round already delivered
  uint64_t dropped_answers = 0;    // counts did not match, or superseded
  uint64_t ignored_records = 0;    // undecodable or malformed
  uint64_t resync_requests = 0;
};

class RoundAssembler {
 public:
  explicit RoundAssembler(int partition_count, bool confirm_with_ledger = false,
                          size_t remember_rounds = 10'000)
      : partition_count_(partition_count),
        confirm_with_ledger_(confirm_with_ledger),
        remember_rounds_(remember_rounds) {}

  // One record read at (partition, offset); nullptr if it did not decode.
  void Add(int32_t partition, int64_t offset,
           const v1::PlacementRecord* record);

  // One record of the ledger topic, in offset order (ledger mode only).
  void AddLedger(v1::LedgerRecord record);

  // The next round to deliver; it stays pending (returned again) until
  // Commit().
  std::optional<Round> NextRound();

  // The caller acted on `round` (as returned by NextRound): never again.
  void Commit(const Round& round);

  // partition -> lowest offset a pending answer still needs.
  [[nodiscard]] std::map<int32_t, int64_t> HeldOffsets() const;

  [[nodiscard]] const AssemblerStats& stats() const { return stats_; }
  [[nodiscard]] uint64_t current_solver_epoch() const {
    return current_solver_epoch_;
  }

 private:
  using Key = std::tuple<uint64_t, uint64_t, uint64_t>;  // round, graph, worker
  struct Answer {
    // partition -> decisions in read order, and their keys.
    std::map<int32_t, std::vector<v1::PlacementDecision>> decisions;
    std::map<int32_t, std::set<std::string>> keys;
    std::map<int32_t, v1::RoundComplete> markers;
    std::map<int32_t, int64_t> offsets;  // partition -> lowest offset
    bool complete = false;
    void Hold(int32_t partition, int64_t offset);
  };

  void OnResync(uint64_t epoch);
  void OnMarker(const Key& key, Answer& answer, int32_t partition,
                int64_t offset, const v1::RoundComplete& marker);
  void Fence(const Key& key);
  void Drop(const Key& key);
  void Unready(const Key& key);
  // Ledger mode: the round of a complete answer as the graph manager
  // applied it; nullopt while not applied, or if the ledger names another
  // answer (then dropped).
  std::optional<Round> Confirmed(const Key& key);
  // The graph manager's RoundApplied of (round, graph epoch), or nullptr.
  [[nodiscard]] const v1::RoundApplied* FindApplied(uint64_t round_id,
                                                    uint64_t graph_epoch) const;

  int partition_count_;
  bool confirm_with_ledger_;
  size_t remember_rounds_;
  graph_manager::LedgerAssembler ledger_parts_;
  graph_manager::LedgerHistory ledger_;
  AssemblerStats stats_;
  uint64_t current_solver_epoch_ = 0;
  uint64_t last_round_id_ = 0;
  uint64_t last_graph_epoch_ = 0;
  std::map<Key, Answer> answers_;
  std::set<Key> fenced_;
  std::vector<Key> ready_;  // complete and accepted, in completion order
  std::unordered_map<std::string, uint64_t> delivered_;  // key -> round
  std::deque<std::pair<uint64_t, std::vector<std::string>>> delivered_rounds_;
};

}  // namespace flowsched::client
