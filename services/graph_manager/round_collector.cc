#include "services/graph_manager/round_collector.h"

#include <utility>

namespace flowsched::graph_manager {

void RoundCollector::Expect(uint64_t round_id, uint64_t graph_epoch,
                            uint32_t partition_count) {
  Clear();
  round_id_ = round_id;
  graph_epoch_ = graph_epoch;
  partition_count_ = partition_count;
}

void RoundCollector::Clear() {
  round_id_.reset();
  answers_.clear();
}

void RoundCollector::set_solver_epoch(uint64_t solver_epoch) {
  if (solver_epoch != solver_epoch_) answers_.clear();
  solver_epoch_ = solver_epoch;
}

bool RoundCollector::Add(int32_t partition, const v1::PlacementRecord& record) {
  const uint64_t worker_epoch =
      record.has_decision()         ? record.decision().epoch()
      : record.has_round_complete() ? record.round_complete().epoch()
                                    : solver_epoch_;
  if (solver_epoch_ != 0 && worker_epoch != solver_epoch_) {
    ++fenced_;
    return false;
  }
  if (!round_id_.has_value()) {
    ++ignored_;
    return false;
  }
  if (record.has_decision()) {
    const v1::PlacementDecision& decision = record.decision();
    if (decision.round_id() != *round_id_ ||
        decision.graph_epoch() != graph_epoch_) {
      ++ignored_;
      return false;
    }
    answers_[decision.epoch()].decisions.push_back(decision);
    return false;
  }
  if (!record.has_round_complete()) return false;
  const v1::RoundComplete& marker = record.round_complete();
  if (marker.round_id() != *round_id_ || marker.graph_epoch() != graph_epoch_ ||
      marker.partition_count() != partition_count_ || partition < 0 ||
      static_cast<uint32_t>(partition) != marker.partition()) {
    ++ignored_;
    return false;
  }
  Answer& answer = answers_[marker.epoch()];
  answer.closed_partitions.insert(marker.partition());
  answer.total_decisions = marker.total_decisions();
  answer.summary = marker;
  if (answer.closed_partitions.size() != partition_count_) return false;
  if (answer.decisions.size() != answer.total_decisions) {
    // Markers all arrived but decisions are missing or duplicated: the
    // answer is unusable. Drop it; the round times out and is re-cut.
    answers_.erase(marker.epoch());
    ++ignored_;
    return false;
  }
  complete_decisions_ = std::move(answer.decisions);
  complete_summary_ = answer.summary;
  Clear();
  return true;
}

}  // namespace flowsched::graph_manager
