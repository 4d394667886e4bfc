#include "services/graph_manager/state_rebuilder.h"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fmt/format.h"
#include "services/common/clock.h"
#include "services/common/status_macros.h"
#include "services/graph_manager/ledger_parts.h"
#include "spdlog/spdlog.h"

namespace flowsched::graph_manager {
namespace {

constexpr size_t kPollRecords = 5000;
constexpr int kPollTimeoutMs = 100;

}  // namespace

bool LedgerFence::Admit(const v1::LedgerRecord& record,
                        std::vector<uint64_t>* superseded) {
  const uint64_t seq = record.seq();
  const GraphEpoch epoch(record.epoch());
  max_epoch_ = std::max(max_epoch_, epoch);
  if (record.has_claim()) {
    max_epoch_ = std::max(max_epoch_, GraphEpoch(record.claim().epoch()));
  }
  // Superseded: a later epoch claimed at or below this seq. (A record below
  // that claim's seq still belongs to the history, even if it arrives
  // after the claim, e.g. re-published after a failed delivery.)
  // Any higher epoch's claim counts, not only the next one: claims may
  // arrive in any order, and a higher epoch may have claimed lower.
  bool fenced = seq == 0;
  for (auto claim = claims_.upper_bound(epoch); claim != claims_.end();
       ++claim) {
    fenced = fenced || seq >= claim->second;
  }
  if (fenced) {
    ++ignored_;
    return false;
  }
  if (record.has_claim()) {
    claimed_epoch_ = std::max(claimed_epoch_, epoch);
    auto [claim, fresh] = claims_.try_emplace(epoch, seq);
    if (!fresh) claim->second = std::min(claim->second, seq);
    // The claimer built on records below `seq`; an older epoch's records
    // from `seq` on are a tail it never saw.
    for (auto it = epochs_.lower_bound(seq); it != epochs_.end();) {
      if (it->second < epoch) {
        superseded->push_back(it->first);
        it = epochs_.erase(it);
        ++ignored_;
      } else {
        ++it;
      }
    }
  }
  if (!epochs_.try_emplace(seq, epoch).second) {
    ++ignored_;  // a re-published duplicate, or a fenced competitor
    return false;
  }
  return true;
}

void LedgerHistory::Add(v1::LedgerRecord record) {
  std::vector<uint64_t> superseded;
  const bool admitted = fence_.Admit(record, &superseded);
  for (uint64_t seq : superseded) records_.erase(seq);
  if (admitted) records_.emplace(record.seq(), std::move(record));
}

const v1::LedgerRecord* LedgerHistory::Find(uint64_t seq) const {
  auto it = records_.find(seq);
  return it == records_.end() ? nullptr : &it->second;
}

absl::Status ReadLedger(bus::RecordSource& consumer, const std::string& topic,
                        int timeout_ms, int64_t* next_offset,
                        LedgerHistory& history) {
  FLOWSCHED_ASSIGN_OR_RETURN(const auto marks,
                             consumer.Watermarks(topic, 0, timeout_ms));
  int64_t next = *next_offset < 0 ? marks.first : *next_offset;
  if (next < marks.first) {
    spdlog::error(
        "ledger {} starts at offset {}, records before it are gone "
        "(retention must be infinite: services/bus/README.md)",
        topic, marks.first);
    next = marks.first;
  }
  if (next >= marks.second) {
    *next_offset = next;
    return absl::OkStatus();
  }
  FLOWSCHED_RETURN_IF_ERROR(consumer.Assign({{topic, 0, next}}));
  LedgerAssembler assembler;
  const int64_t deadline = SteadyMicros() + int64_t{timeout_ms} * 1000;
  while (next < marks.second) {
    if (SteadyMicros() > deadline) {
      return absl::UnavailableError(
          fmt::format("ledger {} delivered offsets up to {} of {} in {} ms",
                      topic, next, marks.second, timeout_ms));
    }
    FLOWSCHED_ASSIGN_OR_RETURN(auto records,
                               consumer.Poll(kPollRecords, kPollTimeoutMs));
    for (bus::Record& record : records) {
      if (record.topic != topic || record.offset < next) continue;
      next = record.offset + 1;
      v1::LedgerRecord parsed;
      if (!parsed.ParseFromString(record.value)) {
        spdlog::error("ledger record at offset {} does not parse; skipped",
                      record.offset);
        continue;
      }
      std::optional<v1::LedgerRecord> whole = assembler.Add(std::move(parsed));
      if (whole.has_value()) history.Add(std::move(*whole));
    }
  }
  if (assembler.incomplete() > 0) {
    // The writer was cut off between slices; the record was still pending
    // in its store and will be published again whole.
    spdlog::warn("ledger {}: {} records with slices missing; ignored", topic,
                 assembler.incomplete());
  }
  *next_offset = next;
  return consumer.Assign({});
}

EventFeed::EventFeed(bus::RecordSource& consumer, std::string topic,
                     int32_t partitions, std::map<int32_t, int64_t> start,
                     int timeout_ms)
    : consumer_(consumer),
      topic_(std::move(topic)),
      partitions_(partitions),
      start_(std::move(start)),
      timeout_ms_(timeout_ms) {}

absl::Status EventFeed::EnsureAssigned() {
  if (assigned_) return absl::OkStatus();
  std::vector<bus::TopicPartitionOffset> assignment;
  for (int32_t p = 0; p < partitions_; ++p) {
    auto it = start_.find(p);
    assignment.push_back(
        {topic_, p, it == start_.end() ? bus::kOffsetBeginning : it->second});
  }
  FLOWSCHED_RETURN_IF_ERROR(consumer_.Assign(assignment));
  assigned_ = true;
  return absl::OkStatus();
}

absl::StatusOr<bus::Record> EventFeed::Take(int32_t partition, int64_t offset) {
  if (partition < 0 || partition >= partitions_) {
    return absl::DataLossError(fmt::format(
        "ledger names events partition {} of {}", partition, partitions_));
  }
  FLOWSCHED_RETURN_IF_ERROR(EnsureAssigned());
  std::deque<bus::Record>& buffer = buffers_[partition];
  const int64_t deadline = SteadyMicros() + int64_t{timeout_ms_} * 1000;
  while (true) {
    while (!buffer.empty() && buffer.front().offset < offset) {
      buffer.pop_front();
    }
    if (!buffer.empty()) {
      if (buffer.front().offset != offset) {
        return absl::DataLossError(fmt::format(
            "events {}/{} no longer holds offset {} (next is {}): the topic "
            "must keep every record",
            topic_, partition, offset, buffer.front().offset));
      }
      bus::Record record = std::move(buffer.front());
      buffer.pop_front();
      return record;
    }
    if (SteadyMicros() > deadline) {
      return absl::UnavailableError(
          fmt::format("events {}/{} did not deliver offset {} in {} ms", topic_,
                      partition, offset, timeout_ms_));
    }
    FLOWSCHED_ASSIGN_OR_RETURN(auto records,
                               consumer_.Poll(kPollRecords, kPollTimeoutMs));
    for (bus::Record& record : records) {
      if (record.topic != topic_) continue;
      buffers_[record.partition].push_back(std::move(record));
    }
  }
}

absl::StatusOr<std::string> MoveAside(const std::string& dir) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  const std::string base = fmt::format(
      "{}.damaged-{:04}{:02}{:02}T{:02}{:02}{:02}Z", dir, utc.tm_year + 1900,
      utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
  std::string target = base;
  std::error_code ec;
  for (int i = 1; std::filesystem::exists(target, ec); ++i) {
    target = absl::StrCat(base, "-", i);
  }
  std::filesystem::rename(dir, target, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("cannot move the damaged state ",
                                               dir, " aside: ", ec.message()));
  }
  return target;
}

}  // namespace flowsched::graph_manager
