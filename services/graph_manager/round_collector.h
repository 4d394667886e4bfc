#pragma once

// Gathers the results of the one solver round the graph manager has in
// flight. Decisions arrive on every placements partition, each partition
// closed by a RoundComplete marker; the round is complete when every
// partition's marker arrived and the decision count matches the total the
// markers announce. Results for other rounds, or cut by another graph
// manager epoch, are ignored. If two solver workers answer (a standby that
// thinks it is active), the first complete answer wins and the other is
// dropped as a whole, never mixed.
//
// Fencing: once a current solver epoch is set, decisions and markers from
// any other worker epoch are not even collected (counted as fenced), so a
// paused, partitioned or restarted old worker cannot get its answer
// applied, whatever round it names.
//
// Idempotence: a placements record can be delivered again (a consumer
// re-assignment or a seek back to a committed offset re-reads records the
// collector already holds). Each answer remembers the highest offset it
// took per partition; a record at or below it was taken already and is
// only counted (duplicate_records()), so a decision is never counted twice
// and the answer still completes. Records of one partition arrive in
// offset order, so the highest offset is enough. The offsets belong to the
// answer and go with it (Expect, Clear, a new solver epoch, a dropped
// answer); those of the last completed answer are kept until the next
// Expect or Clear, so a late repeat of it is counted as a duplicate too.
//
// Thread-safety: none.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "flowsched/v1/placements.pb.h"
#include "services/common/strong_id.h"

namespace flowsched::graph_manager {

class RoundCollector {
 public:
  void Expect(RoundId round_id, GraphEpoch graph_epoch,
              uint32_t partition_count);
  // Stops collecting: partial answers, and the offsets the last completed
  // answer took, are dropped.
  void Clear();
  // The only worker epoch whose answers count; 0 accepts any. Survives
  // Expect() and Clear(). Changing it drops answers collected so far.
  void set_solver_epoch(WorkerEpoch solver_epoch);
  [[nodiscard]] WorkerEpoch solver_epoch() const { return solver_epoch_; }
  [[nodiscard]] bool expecting() const { return round_id_.has_value(); }
  // The round expected; RoundId() (0) when none is.
  [[nodiscard]] RoundId round_id() const {
    return round_id_.value_or(RoundId());
  }
  [[nodiscard]] GraphEpoch graph_epoch() const { return graph_epoch_; }

  // Feeds one decoded record read from `partition` at `offset`. Returns
  // true if it completed the expected round; then complete_decisions() and
  // complete_summary() hold the answer until the next Expect or Clear.
  // REQUIRES: offsets of one partition increase, except after a rewind
  // (whose records up to the highest offset taken are duplicates). A
  // partition whose offsets restart lower mid-round (a recreated topic, a
  // reset to the earliest offset) has its new records taken as repeats:
  // the round then times out and is cut again, a delay, not a loss.
  bool Add(int32_t partition, int64_t offset,
           const v1::PlacementRecord& record);

  [[nodiscard]] const std::vector<v1::PlacementDecision>& complete_decisions()
      const {
    return complete_decisions_;
  }
  [[nodiscard]] const v1::RoundComplete& complete_summary() const {
    return complete_summary_;
  }
  [[nodiscard]] uint64_t ignored_records() const { return ignored_; }
  [[nodiscard]] uint64_t fenced_records() const { return fenced_; }
  // Records read again at an offset their answer had taken (see above).
  [[nodiscard]] uint64_t duplicate_records() const { return duplicates_; }

 private:
  // Placements partition -> highest offset taken.
  using TakenOffsets = std::map<int32_t, int64_t>;

  struct Answer {
    std::vector<v1::PlacementDecision> decisions;
    std::set<uint32_t> closed_partitions;
    uint32_t total_decisions = 0;
    v1::RoundComplete summary;
    TakenOffsets taken;
  };

  // Records `offset` as taken; false if it (or a later one of the same
  // partition) was taken already.
  static bool Take(TakenOffsets& taken, int32_t partition, int64_t offset);
  // A repeat of a record the last completed answer took.
  [[nodiscard]] bool RepeatsCompleteAnswer(
      int32_t partition, int64_t offset,
      const v1::PlacementRecord& record) const;
  void DropAnswers();

  std::optional<RoundId> round_id_;
  GraphEpoch graph_epoch_;
  uint32_t partition_count_ = 0;
  std::map<WorkerEpoch, Answer> answers_;
  std::vector<v1::PlacementDecision> complete_decisions_;
  v1::RoundComplete complete_summary_;
  // The offsets the completed answer took; empty when there is none.
  TakenOffsets complete_taken_;
  uint64_t ignored_ = 0;
  uint64_t duplicates_ = 0;
  WorkerEpoch solver_epoch_;
  uint64_t fenced_ = 0;
};

}  // namespace flowsched::graph_manager
