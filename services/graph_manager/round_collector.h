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
// Thread-safety: none.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "flowsched/v1/placements.pb.h"

namespace flowsched::graph_manager {

class RoundCollector {
 public:
  void Expect(uint64_t round_id, uint64_t graph_epoch,
              uint32_t partition_count);
  void Clear();
  // The only worker epoch whose answers count; 0 accepts any. Survives
  // Expect() and Clear(). Changing it drops answers collected so far.
  void set_solver_epoch(uint64_t solver_epoch);
  [[nodiscard]] uint64_t solver_epoch() const { return solver_epoch_; }
  [[nodiscard]] bool expecting() const { return round_id_.has_value(); }
  [[nodiscard]] uint64_t round_id() const { return round_id_.value_or(0); }
  [[nodiscard]] uint64_t graph_epoch() const { return graph_epoch_; }

  // Feeds one decoded record read from `partition`. Returns true if it
  // completed the expected round; then complete_decisions() and
  // complete_summary() hold the answer until the next Expect or Clear.
  bool Add(int32_t partition, const v1::PlacementRecord& record);

  [[nodiscard]] const std::vector<v1::PlacementDecision>& complete_decisions()
      const {
    return complete_decisions_;
  }
  [[nodiscard]] const v1::RoundComplete& complete_summary() const {
    return complete_summary_;
  }
  [[nodiscard]] uint64_t ignored_records() const { return ignored_; }
  [[nodiscard]] uint64_t fenced_records() const { return fenced_; }

 private:
  struct Answer {
    std::vector<v1::PlacementDecision> decisions;
    std::set<uint32_t> closed_partitions;
    uint32_t total_decisions = 0;
    v1::RoundComplete summary;
  };

  std::optional<uint64_t> round_id_;
  uint64_t graph_epoch_ = 0;
  uint32_t partition_count_ = 0;
  std::map<uint64_t, Answer> answers_;  // by solver epoch
  std::vector<v1::PlacementDecision> complete_decisions_;
  v1::RoundComplete complete_summary_;
  uint64_t ignored_ = 0;
  uint64_t solver_epoch_ = 0;
  uint64_t fenced_ = 0;
};

}  // namespace flowsched::graph_manager
