#include "services/codec/round_parts.h"

#include <algorithm>
#include <utility>

#include "services/codec/round_codec.h"

namespace flowsched::codec {

std::vector<v1::SolverRound> SplitRound(
    const v1::SolverRound& header, std::span<const flow::GraphChange> changes,
    size_t max_record_bytes) {
  v1::SolverRound base = header;
  base.clear_changes();
  base.clear_part();
  base.clear_part_count();
  // The gang list travels with part 0 only (the assembler keeps part 0's
  // fields), so it is not repeated in every part.
  v1::SolverRound rest = base;
  rest.clear_gangs();
  const size_t rest_bytes = rest.ByteSizeLong();
  std::vector<v1::SolverRound> parts(1, base);
  size_t part_bytes = base.ByteSizeLong();
  for (const flow::GraphChange& change : changes) {
    v1::GraphChange encoded;
    EncodeChange(change, encoded);
    const size_t change_bytes = encoded.ByteSizeLong() + 8;
    if (part_bytes + change_bytes > max_record_bytes &&
        parts.back().changes_size() > 0) {
      parts.push_back(rest);
      part_bytes = rest_bytes;
    }
    *parts.back().add_changes() = std::move(encoded);
    part_bytes += change_bytes;
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    parts[i].set_part(static_cast<uint32_t>(i));
    parts[i].set_part_count(static_cast<uint32_t>(parts.size()));
  }
  return parts;
}

RoundAssembler::Progress RoundAssembler::Add(v1::SolverRound part) {
  if (complete_) Reset();  // the last round was not taken: done with it
  const uint32_t count = std::max<uint32_t>(part.part_count(), 1);
  if (part.part() >= count ||
      (assembling_ != nullptr && part.part() > 0 &&
       assembling_->part_count() != part.part_count())) {
    // Parts of one round all carry its count; one that disagrees (or
    // numbers itself past it) is not of the round being assembled.
    assembling_.reset();
    return Progress::kMissingPart;
  }
  if (part.part() == 0) {
    assembling_ = std::make_unique<v1::SolverRound>(std::move(part));
  } else if (assembling_ != nullptr &&
             assembling_->round_id() == part.round_id() &&
             assembling_->epoch() == part.epoch() &&
             assembling_->part() + 1 == part.part()) {
    assembling_->set_part(part.part());
    for (v1::GraphChange& change : *part.mutable_changes()) {
      *assembling_->add_changes() = std::move(change);
    }
  } else {
    assembling_.reset();
    return Progress::kMissingPart;
  }
  if (assembling_->part() + 1 < count) return Progress::kIncomplete;
  complete_ = true;
  return Progress::kComplete;
}

v1::SolverRound RoundAssembler::TakeRound() {
  v1::SolverRound round = std::move(*assembling_);
  Reset();
  return round;
}

}  // namespace flowsched::codec
