#include "services/graph_manager/ledger_parts.h"

#include <algorithm>
#include <utility>

#include "spdlog/spdlog.h"

namespace flowsched::graph_manager {

std::vector<std::string> SplitLedgerRecord(std::string serialized, uint64_t seq,
                                           GraphEpoch epoch, size_t max_bytes) {
  std::vector<std::string> parts;
  if (serialized.size() <= max_bytes) {
    // Most records: produced as they are, without another copy.
    parts.push_back(std::move(serialized));
    return parts;
  }
  // Room for the slice's own fields (seq, epoch, part numbers, length).
  const size_t slice_bytes = std::max<size_t>(max_bytes - 64, 1);
  const size_t count = (serialized.size() + slice_bytes - 1) / slice_bytes;
  parts.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    v1::LedgerRecord part;
    part.set_seq(seq);
    part.set_epoch(epoch.value());
    part.set_part(static_cast<uint32_t>(i));
    part.set_part_count(static_cast<uint32_t>(count));
    part.set_part_bytes(serialized.substr(i * slice_bytes, slice_bytes));
    parts.push_back(part.SerializeAsString());
  }
  return parts;
}

std::optional<v1::LedgerRecord> LedgerAssembler::Add(v1::LedgerRecord record) {
  if (record.part_count() <= 1) return record;
  if (record.part() >= record.part_count()) {
    spdlog::error("ledger seq {}: slice {} of {} is out of range; skipped",
                  record.seq(), record.part(), record.part_count());
    return std::nullopt;
  }
  const std::pair<uint64_t, GraphEpoch> key{record.seq(),
                                            GraphEpoch(record.epoch())};
  if (assembled_.contains(key)) return std::nullopt;  // a late duplicate
  Partial& partial = partial_[key];
  if (partial.count == 0) partial.count = record.part_count();
  if (partial.count != record.part_count()) {
    spdlog::error(
        "ledger seq {}: slices disagree on their count ({} vs {}); "
        "slice skipped",
        record.seq(), partial.count, record.part_count());
    return std::nullopt;
  }
  partial.slices.emplace(record.part(),
                         std::move(*record.mutable_part_bytes()));
  if (partial.slices.size() < partial.count) return std::nullopt;
  std::string whole;
  for (auto& [index, slice] : partial.slices) whole += slice;
  const uint64_t seq = record.seq();
  partial_.erase(key);
  assembled_.insert(key);
  v1::LedgerRecord assembled;
  if (!assembled.ParseFromString(whole)) {
    spdlog::error(
        "ledger seq {}: its slices do not parse as one record; "
        "skipped",
        seq);
    return std::nullopt;
  }
  return assembled;
}

}  // namespace flowsched::graph_manager
