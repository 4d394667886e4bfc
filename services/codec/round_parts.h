#pragma once

// A solver round larger than one broker record travels as numbered parts
// (SolverRound.part / part_count) in the one rounds partition: the graph
// manager cuts it (SplitRound), the solver worker puts it together again
// (RoundAssembler). Every part repeats the round's header (round id, epochs,
// snapshot, base round) but for the gang list, which part 0 alone carries;
// the changes are cut between parts in order.
// Parts are published one after the other by one producer, so a reader sees
// them in order; a missing part means the round is lost (its graph manager
// died mid-publication, or the reader started in the middle), never that it
// comes later.
//
// The ledger's records are sliced the same way for the same reason, but as
// bytes and read only by graph managers: services/graph_manager/ledger_parts.h.
//
// Thread-safety: RoundAssembler is not thread-safe.

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "flowsched/v1/rounds.pb.h"
#include "services/flow/graph_change.h"

namespace flowsched::codec {

// The records of one round: `header` (its changes and part numbers are
// ignored) once per record, with `changes` encoded in order and cut so that
// a record stays within `max_record_bytes`: each change counts as its
// encoded size plus 8 bytes, room for its tag and length and for the part
// numbers of a round of fewer than 128 parts. A change that alone exceeds
// the limit travels in a record of its own. Parts are numbered 0..n-1 with
// part_count n; a round without changes is one record.
std::vector<v1::SolverRound> SplitRound(
    const v1::SolverRound& header, std::span<const flow::GraphChange> changes,
    size_t max_record_bytes);

class RoundAssembler {
 public:
  enum class Progress {
    kIncomplete,   // parts of the round are still to come
    kComplete,     // the round is whole: TakeRound()
    kMissingPart,  // the part does not continue the round (see Add)
  };

  // Takes the next record read from the rounds partition. Part 0 starts a
  // round (an incomplete earlier one is dropped silently: its graph manager
  // never finished it and has moved on). Any other part must be the next
  // part of the round being assembled (same round id and graph epoch);
  // otherwise a part is missing or the part belongs to another round: the
  // parts held are dropped and kMissingPart tells the caller that its
  // replica may be behind. A round whose part_count is 0 or 1 is complete
  // with part 0.
  Progress Add(v1::SolverRound part);

  // The whole round, moved out; the assembler is empty again.
  // REQUIRES: the last Add() returned kComplete.
  v1::SolverRound TakeRound();

  // Drops whatever is held (the reader lost the rounds partition).
  void Reset() {
    assembling_.reset();
    complete_ = false;
  }

  // Parts of an incomplete round are held.
  [[nodiscard]] bool assembling() const {
    return assembling_ != nullptr && !complete_;
  }

 private:
  // The parts so far, as one round (part = the last part taken).
  std::unique_ptr<v1::SolverRound> assembling_;
  bool complete_ = false;
};

}  // namespace flowsched::codec
