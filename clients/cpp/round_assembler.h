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
// graph manager's own LedgerAssembler and LedgerFence), a complete answer
// is returned only once its RoundApplied is known: the applied decisions
// (the graph manager's copies) in `decisions`, the rejected ones with their
// reason in `stale`. With report_stale (placements-only mode; see
// ReportStale) rounds are still returned at once, and the ledger's
// RoundApplied records that reject decisions become StaleReports, each
// returned only after its round was committed. Not thread-safe.

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

#include "absl/status/status.h"
#include "clients/cpp/ledger_rounds.h"
#include "flowsched/v1/ledger.pb.h"
#include "flowsched/v1/placements.pb.h"

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

// The decisions the graph manager rejected as stale in one round it applied
// (its RoundApplied), reported after the round was delivered at once.
struct StaleReport {
  uint64_t round_id = 0;
  uint64_t graph_epoch = 0;
  // The graph manager's copy of each rejected decision (idempotency_key
  // names it), with its reason; never empty.
  std::vector<std::pair<v1::PlacementDecision, std::string>> stale;
};

struct AssemblerStats {
  uint64_t records = 0;
  uint64_t rounds_delivered = 0;
  uint64_t decisions_delivered = 0;
  uint64_t stale_decisions = 0;    // rejected by the graph manager (delivered
                                   // in Round::stale, or reported)
  uint64_t stale_reports = 0;      // StaleReports committed
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

  // Placements-only mode: also report what the graph manager rejects.
  // RoundApplied records completing below `ledger_floor` (a ledger offset:
  // what an earlier subscriber of the group settled) are not reported.
  // InvalidArgument with confirm_with_ledger (its rounds carry `stale`
  // already). REQUIRES: before any record.
  absl::Status ReportStale(int64_t ledger_floor);

  // One record of the ledger topic at `offset` (-1: not known), in offset
  // order and from the topic's beginning (ledger or report_stale mode).
  void AddLedger(v1::LedgerRecord record, int64_t offset = -1);

  // The next round to deliver; it stays pending (returned again) until
  // Commit().
  std::optional<Round> NextRound();

  // The caller acted on `round` (as returned by NextRound): never again.
  void Commit(const Round& round);

  // partition -> lowest offset a pending answer still needs.
  [[nodiscard]] std::map<int32_t, int64_t> HeldOffsets() const;

  // report_stale: the next report, after the commit of its round (or at
  // once once this instance delivered a round, for a round below the first
  // it delivered: an earlier subscriber of the group may have delivered
  // it). It stays pending (returned again) until CommitStaleReport().
  std::optional<StaleReport> NextStaleReport() const;
  void CommitStaleReport();
  // report_stale: how far the ledger offset may be committed (every
  // RoundApplied below it reported or settled); nullopt before any record
  // with an offset was read.
  [[nodiscard]] std::optional<int64_t> LedgerCommitOffset() const;

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
  // report_stale: turns kept RoundApplied records whose round is settled
  // into reports (or drops them: a round this instance skipped).
  void SettleStale();
  [[nodiscard]] bool DeliveredHere(uint64_t round_id,
                                   uint64_t graph_epoch) const;

  int partition_count_;
  bool confirm_with_ledger_;
  size_t remember_rounds_;
  bool report_stale_ = false;
  LedgerRounds ledger_;  // report_stale: only rounds rejecting a decision
  int64_t ledger_floor_ = 0;
  int64_t ledger_position_ = -1;  // next ledger offset, -1 before any
  uint64_t first_round_id_ = 0;   // the first this instance delivered
  // report_stale: reports not yet committed, with their ledger offset.
  std::deque<std::pair<StaleReport, int64_t>> stale_reports_;
  AssemblerStats stats_;
  uint64_t current_solver_epoch_ = 0;
  uint64_t last_round_id_ = 0;
  uint64_t last_graph_epoch_ = 0;
  std::map<Key, Answer> answers_;
  std::set<Key> fenced_;
  std::vector<Key> ready_;  // complete and accepted, in completion order
  std::unordered_map<std::string, uint64_t> delivered_;  // key -> round
  struct Delivered {
    uint64_t round_id;
    uint64_t graph_epoch;
    std::vector<std::string> keys;
  };
  std::deque<Delivered> delivered_rounds_;  // increasing round ids
};

}  // namespace flowsched::client
