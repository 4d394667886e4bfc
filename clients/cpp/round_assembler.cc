#include "clients/cpp/round_assembler.h"

#include <algorithm>

namespace flowsched::client {

void RoundAssembler::Answer::Hold(int32_t partition, int64_t offset) {
  auto [it, inserted] = offsets.emplace(partition, offset);
  if (!inserted && offset < it->second) it->second = offset;
}

void RoundAssembler::Add(int32_t partition, int64_t offset,
                         const v1::PlacementRecord* record) {
  ++stats_.records;
  if (record == nullptr) {
    ++stats_.ignored_records;
    return;
  }
  if (record->has_resync_request()) {
    OnResync(record->resync_request().epoch());
    return;
  }
  Key key;
  if (record->has_decision()) {
    const auto& d = record->decision();
    key = {d.round_id(), d.graph_epoch(), d.epoch()};
  } else if (record->has_round_complete()) {
    const auto& m = record->round_complete();
    key = {m.round_id(), m.graph_epoch(), m.epoch()};
  } else {
    ++stats_.ignored_records;
    return;
  }
  if (fenced_.contains(key)) {
    ++stats_.fenced_records;
    return;
  }
  if (record->has_decision() &&
      delivered_.contains(record->decision().idempotency_key())) {
    ++stats_.duplicate_records;
    return;
  }
  if (std::get<0>(key) <= last_round_id_) {
    ++stats_.duplicate_records;  // a repeat, or too late to count
    return;
  }
  // Epochs are judged when the answer completes: partitions are read in no
  // set order, so a ResyncRequest (partition 0) may come after its worker's
  // first decisions on other partitions.
  Answer& answer = answers_[key];
  if (answer.complete) {
    ++stats_.duplicate_records;
    return;
  }
  if (record->has_decision()) {
    const v1::PlacementDecision& d = record->decision();
    if (!answer.keys[partition].insert(d.idempotency_key()).second) {
      ++stats_.duplicate_records;
      return;
    }
    answer.decisions[partition].push_back(d);
    answer.Hold(partition, offset);
    return;
  }
  OnMarker(key, answer, partition, offset, record->round_complete());
}

void RoundAssembler::OnResync(uint64_t epoch) {
  ++stats_.resync_requests;
  current_solver_epoch_ = epoch;
  if (confirm_with_ledger_) return;  // the ledger says what counted
  for (auto it = answers_.begin(); it != answers_.end();) {
    if (std::get<2>(it->first) != epoch) {
      if (it->second.complete) Unready(it->first);
      it = answers_.erase(it);
      ++stats_.dropped_answers;
    } else {
      ++it;
    }
  }
}

void RoundAssembler::OnMarker(const Key& key, Answer& answer, int32_t partition,
                              int64_t offset, const v1::RoundComplete& marker) {
  if (answer.markers.contains(partition)) {
    ++stats_.duplicate_records;
    return;
  }
  if (static_cast<int64_t>(marker.partition()) != partition ||
      static_cast<int>(marker.partition_count()) != partition_count_) {
    ++stats_.ignored_records;  // not this partition's marker
    return;
  }
  if (marker.solver_epoch() != 0 && marker.epoch() != marker.solver_epoch()) {
    Fence(key);  // answered by a worker the round was not addressed to
    return;
  }
  answer.markers[partition] = marker;
  answer.Hold(partition, offset);
  if (static_cast<int>(answer.markers.size()) < partition_count_) return;
  uint64_t total = 0;
  for (const auto& [p, m] : answer.markers) {
    auto it = answer.decisions.find(p);
    const size_t got = it == answer.decisions.end() ? 0 : it->second.size();
    total += got;
    if (got != m.partition_decisions() ||
        m.total_decisions() != marker.total_decisions()) {
      Drop(key);
      return;
    }
  }
  if (total != marker.total_decisions()) {
    Drop(key);
    return;
  }
  answer.complete = true;
  ready_.push_back(key);
}

void RoundAssembler::Unready(const Key& key) {
  ready_.erase(std::remove(ready_.begin(), ready_.end(), key), ready_.end());
}

void RoundAssembler::Fence(const Key& key) {
  auto it = answers_.find(key);
  if (it != answers_.end()) {
    uint64_t records = it->second.markers.size() + 1;
    for (const auto& [p, ds] : it->second.decisions) records += ds.size();
    stats_.fenced_records += records;
    if (it->second.complete) Unready(key);
    answers_.erase(it);
  }
  fenced_.insert(key);
}

void RoundAssembler::Drop(const Key& key) {
  answers_.erase(key);
  fenced_.insert(key);
  ++stats_.dropped_answers;
}

std::optional<Round> RoundAssembler::NextRound() {
  const std::vector<Key> ready = ready_;
  for (const Key& key : ready) {
    const auto [round_id, graph_epoch, worker] = key;
    if (round_id <= last_round_id_) {
      Unready(key);
      answers_.erase(key);
      ++stats_.dropped_answers;
      continue;
    }
    if (confirm_with_ledger_) {
      std::optional<Round> round = Confirmed(key);
      if (round.has_value()) return round;
      continue;
    }
    if (graph_epoch < last_graph_epoch_ ||
        (current_solver_epoch_ != 0 && worker != current_solver_epoch_)) {
      Fence(key);
      continue;
    }
    const Answer& answer = answers_.at(key);
    Round round{round_id, graph_epoch, worker, {}, {}};
    round.summary = answer.markers.contains(0) ? answer.markers.at(0)
                                               : answer.markers.begin()->second;
    for (const auto& [p, ds] : answer.decisions) {
      for (const v1::PlacementDecision& d : ds) {
        if (delivered_.contains(d.idempotency_key())) {
          ++stats_.duplicate_records;
        } else {
          round.decisions.push_back(d);
        }
      }
    }
    return round;
  }
  return std::nullopt;
}

absl::Status RoundAssembler::ReportStale(int64_t ledger_floor) {
  if (confirm_with_ledger_) {
    return absl::InvalidArgumentError(
        "stale reports are for the placements-only mode; with "
        "confirm_with_ledger rounds carry their stale decisions");
  }
  report_stale_ = true;
  ledger_floor_ = std::max<int64_t>(ledger_floor, 0);
  ledger_ = LedgerRounds(/*only_stale=*/true);
  ledger_.set_floor(ledger_floor_);
  return absl::OkStatus();
}

void RoundAssembler::AddLedger(v1::LedgerRecord record, int64_t offset) {
  if (!confirm_with_ledger_ && !report_stale_) return;
  ledger_.Add(std::move(record), offset);
  if (offset >= 0) ledger_position_ = std::max(ledger_position_, offset + 1);
  if (confirm_with_ledger_) {
    ledger_.ForgetThrough(last_round_id_);  // history: never delivered
  } else {
    SettleStale();
  }
}

bool RoundAssembler::DeliveredHere(uint64_t round_id,
                                   uint64_t graph_epoch) const {
  auto it = std::lower_bound(
      delivered_rounds_.begin(), delivered_rounds_.end(), round_id,
      [](const Delivered& d, uint64_t id) { return d.round_id < id; });
  return it != delivered_rounds_.end() && it->round_id == round_id &&
         it->graph_epoch == graph_epoch;
}

void RoundAssembler::SettleStale() {
  // Kept: RoundApplied records that reject a decision, above the floor and
  // not fenced. A round above the last delivered one waits (its answer may
  // still complete: the topics are read in no set order).
  std::vector<LedgerRounds::Key> settled;
  for (const auto& [key, applied] : ledger_.rounds()) {
    const auto [round_id, graph_epoch] = key;
    if (first_round_id_ == 0 || round_id > last_round_id_) break;
    settled.push_back(key);
    // Below the first round delivered here: an earlier subscriber of the
    // group may have delivered it (at least once). Otherwise only a round
    // delivered here; one skipped here (fenced, dropped) was not acted on.
    if (round_id >= first_round_id_ && !DeliveredHere(round_id, graph_epoch)) {
      continue;
    }
    StaleReport report{round_id, graph_epoch, {}};
    for (const v1::LedgerDecision& d : applied.round.decisions()) {
      if (!d.applied())
        report.stale.emplace_back(d.decision(), d.stale_reason());
    }
    stale_reports_.emplace_back(std::move(report), applied.offset);
  }
  for (const LedgerRounds::Key& key : settled) ledger_.Erase(key);
}

std::optional<StaleReport> RoundAssembler::NextStaleReport() const {
  if (stale_reports_.empty()) return std::nullopt;
  return stale_reports_.front().first;
}

void RoundAssembler::CommitStaleReport() {
  if (stale_reports_.empty()) return;
  ++stats_.stale_reports;
  stats_.stale_decisions += stale_reports_.front().first.stale.size();
  stale_reports_.pop_front();
}

std::optional<int64_t> RoundAssembler::LedgerCommitOffset() const {
  if (!report_stale_ || ledger_position_ < 0) return std::nullopt;
  int64_t offset = ledger_position_;
  for (const auto& [key, applied] : ledger_.rounds()) {
    if (applied.offset >= 0) offset = std::min(offset, applied.offset);
  }
  for (const auto& [report, at] : stale_reports_) {
    if (at >= 0) offset = std::min(offset, at);
  }
  return std::max(offset, ledger_floor_);
}

std::optional<Round> RoundAssembler::Confirmed(const Key& key) {
  const auto [round_id, graph_epoch, worker] = key;
  const LedgerRounds::Applied* found = ledger_.Find(round_id, graph_epoch);
  if (found == nullptr) return std::nullopt;  // not (yet) applied
  const v1::RoundApplied* applied = &found->round;
  std::map<std::string, const v1::LedgerDecision*> outcome;
  for (const v1::LedgerDecision& ld : applied->decisions()) {
    if (ld.decision().epoch() == worker) {
      outcome[ld.decision().idempotency_key()] = &ld;
    }
  }
  const Answer& answer = answers_.at(key);
  size_t ours = 0;
  bool same = static_cast<int>(outcome.size()) == applied->decisions_size();
  for (const auto& [p, ds] : answer.decisions) {
    for (const v1::PlacementDecision& d : ds) {
      ++ours;
      same = same && outcome.contains(d.idempotency_key());
    }
  }
  if (!same || ours != outcome.size()) {
    Unready(key);  // the ledger names another answer of this round
    Drop(key);
    return std::nullopt;
  }
  Round round{round_id, graph_epoch, worker, {}, {}, {}, true};
  round.summary = answer.markers.contains(0) ? answer.markers.at(0)
                                             : answer.markers.begin()->second;
  for (const auto& [p, ds] : answer.decisions) {
    for (const v1::PlacementDecision& d : ds) {
      const v1::LedgerDecision& o = *outcome.at(d.idempotency_key());
      if (o.applied()) {
        round.decisions.push_back(o.decision());  // names assigned devices
      } else {
        round.stale.emplace_back(d, o.stale_reason());
      }
    }
  }
  return round;
}

void RoundAssembler::Commit(const Round& round) {
  const Key key{round.round_id, round.graph_epoch, round.solver_epoch};
  answers_.erase(key);
  Unready(key);
  last_round_id_ = round.round_id;
  last_graph_epoch_ = std::max(last_graph_epoch_, round.graph_epoch);
  if (current_solver_epoch_ == 0 && round.summary.solver_epoch() != 0) {
    current_solver_epoch_ = round.solver_epoch;
  }
  std::vector<std::string> keys;
  for (const v1::PlacementDecision& d : round.decisions) {
    keys.push_back(d.idempotency_key());
    delivered_[d.idempotency_key()] = round.round_id;
  }
  for (const auto& [d, reason] : round.stale) {
    keys.push_back(d.idempotency_key());
    delivered_[d.idempotency_key()] = round.round_id;
  }
  delivered_rounds_.push_back(
      {round.round_id, round.graph_epoch, std::move(keys)});
  while (delivered_rounds_.size() > remember_rounds_) {
    for (const std::string& k : delivered_rounds_.front().keys) {
      delivered_.erase(k);
    }
    delivered_rounds_.pop_front();
  }
  ++stats_.rounds_delivered;
  stats_.decisions_delivered += round.decisions.size();
  stats_.stale_decisions += round.stale.size();
  // Rounds up to this one are settled: the graph manager cuts R+1 only
  // after R was applied or abandoned.
  for (auto it = answers_.begin(); it != answers_.end();) {
    if (std::get<0>(it->first) <= round.round_id) {
      it = answers_.erase(it);
      ++stats_.dropped_answers;
    } else {
      ++it;
    }
  }
  std::erase_if(ready_,
                [&](const Key& k) { return std::get<0>(k) <= round.round_id; });
  std::erase_if(fenced_,
                [&](const Key& k) { return std::get<0>(k) <= round.round_id; });
  if (first_round_id_ == 0) first_round_id_ = round.round_id;
  if (confirm_with_ledger_) ledger_.ForgetThrough(round.round_id);
  if (report_stale_) SettleStale();
}

std::map<int32_t, int64_t> RoundAssembler::HeldOffsets() const {
  std::map<int32_t, int64_t> held;
  for (const auto& [key, answer] : answers_) {
    for (const auto& [p, off] : answer.offsets) {
      auto [it, inserted] = held.emplace(p, off);
      if (!inserted && off < it->second) it->second = off;
    }
  }
  return held;
}

}  // namespace flowsched::client
