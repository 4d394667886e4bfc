#include "clients/cpp/ledger_rounds.h"

#include <algorithm>
#include <vector>

namespace flowsched::client {
namespace {

bool RejectsOne(const v1::RoundApplied& round) {
  return std::any_of(round.decisions().begin(), round.decisions().end(),
                     [](const v1::LedgerDecision& d) { return !d.applied(); });
}

}  // namespace

void LedgerRounds::Add(v1::LedgerRecord record, int64_t offset) {
  std::optional<v1::LedgerRecord> whole = parts_.Add(std::move(record));
  if (!whole.has_value()) return;
  std::vector<uint64_t> superseded;
  const bool admitted = fence_.Admit(*whole, &superseded);
  if (!superseded.empty()) {
    std::erase_if(rounds_, [&](const auto& entry) {
      return std::find(superseded.begin(), superseded.end(),
                       entry.second.seq) != superseded.end();
    });
  }
  if (!admitted || (offset >= 0 && offset < floor_)) return;
  for (v1::LedgerStep& step : *whole->mutable_steps()) {
    if (!step.has_round()) continue;
    if (only_stale_ && !RejectsOne(step.round())) continue;
    const Key key{step.round().round_id(), step.round().graph_epoch()};
    Applied& applied = rounds_[key];
    applied.seq = whole->seq();
    applied.offset = offset;
    applied.round = std::move(*step.mutable_round());
  }
}

const LedgerRounds::Applied* LedgerRounds::Find(uint64_t round_id,
                                                uint64_t graph_epoch) const {
  auto it = rounds_.find({round_id, graph_epoch});
  return it == rounds_.end() ? nullptr : &it->second;
}

void LedgerRounds::ForgetThrough(uint64_t round_id) {
  rounds_.erase(rounds_.begin(), rounds_.lower_bound({round_id + 1, 0}));
}

}  // namespace flowsched::client
