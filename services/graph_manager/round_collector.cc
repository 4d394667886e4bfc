#include "services/graph_manager/round_collector.h"

#include <utility>

namespace flowsched::graph_manager {

void RoundCollector::Expect(RoundId round_id, GraphEpoch graph_epoch,
                            uint32_t partition_count) {
  Clear();
  round_id_ = round_id;
  graph_epoch_ = graph_epoch;
  partition_count_ = partition_count;
}

void RoundCollector::Clear() {
  DropAnswers();
  complete_taken_.clear();
}

void RoundCollector::DropAnswers() {
  round_id_.reset();
  answers_.clear();
}

void RoundCollector::set_solver_epoch(WorkerEpoch solver_epoch) {
  if (solver_epoch != solver_epoch_) answers_.clear();
  solver_epoch_ = solver_epoch;
}

bool RoundCollector::Take(TakenOffsets& taken, int32_t partition,
                          int64_t offset) {
  auto [it, first] = taken.try_emplace(partition, offset);
  if (first) return true;
  if (offset <= it->second) return false;
  it->second = offset;
  return true;
}

bool RoundCollector::RepeatsCompleteAnswer(
    int32_t partition, int64_t offset,
    const v1::PlacementRecord& record) const {
  auto it = complete_taken_.find(partition);
  if (it == complete_taken_.end() || offset > it->second) return false;
  const v1::RoundComplete& done = complete_summary_;
  if (record.has_decision()) {
    const v1::PlacementDecision& decision = record.decision();
    return decision.round_id() == done.round_id() &&
           decision.graph_epoch() == done.graph_epoch() &&
           decision.epoch() == done.epoch();
  }
  if (record.has_round_complete()) {
    const v1::RoundComplete& marker = record.round_complete();
    return marker.round_id() == done.round_id() &&
           marker.graph_epoch() == done.graph_epoch() &&
           marker.epoch() == done.epoch();
  }
  return false;
}

bool RoundCollector::Add(int32_t partition, int64_t offset,
                         const v1::PlacementRecord& record) {
  const WorkerEpoch worker_epoch =
      record.has_decision() ? WorkerEpoch(record.decision().epoch())
      : record.has_round_complete()
          ? WorkerEpoch(record.round_complete().epoch())
          : solver_epoch_;
  if (solver_epoch_ != WorkerEpoch() && worker_epoch != solver_epoch_) {
    ++fenced_;
    return false;
  }
  if (!round_id_.has_value()) {
    if (RepeatsCompleteAnswer(partition, offset, record)) {
      ++duplicates_;
    } else {
      ++ignored_;
    }
    return false;
  }
  if (record.has_decision()) {
    const v1::PlacementDecision& decision = record.decision();
    if (RoundId(decision.round_id()) != *round_id_ ||
        GraphEpoch(decision.graph_epoch()) != graph_epoch_) {
      ++ignored_;
      return false;
    }
    Answer& answer = answers_[worker_epoch];
    if (!Take(answer.taken, partition, offset)) {
      ++duplicates_;
      return false;
    }
    answer.decisions.push_back(decision);
    return false;
  }
  if (!record.has_round_complete()) return false;
  const v1::RoundComplete& marker = record.round_complete();
  if (RoundId(marker.round_id()) != *round_id_ ||
      GraphEpoch(marker.graph_epoch()) != graph_epoch_ ||
      marker.partition_count() != partition_count_ || partition < 0 ||
      static_cast<uint32_t>(partition) != marker.partition()) {
    ++ignored_;
    return false;
  }
  Answer& answer = answers_[worker_epoch];
  if (!Take(answer.taken, partition, offset)) {
    ++duplicates_;
    return false;
  }
  answer.closed_partitions.insert(marker.partition());
  answer.total_decisions = marker.total_decisions();
  answer.summary = marker;
  if (answer.closed_partitions.size() != partition_count_) return false;
  if (answer.decisions.size() != answer.total_decisions) {
    // Markers all arrived but decisions are missing or too many (repeats
    // are not taken, so a solver fault): the answer is unusable. Drop it;
    // the round times out and is re-cut.
    answers_.erase(worker_epoch);
    ++ignored_;
    return false;
  }
  complete_decisions_ = std::move(answer.decisions);
  complete_summary_ = answer.summary;
  complete_taken_ = std::move(answer.taken);
  DropAnswers();
  return true;
}

}  // namespace flowsched::graph_manager
