#include "services/bus/memory_bus.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

#include "fmt/format.h"

namespace flowsched::bus {
namespace {

absl::Status UnknownPartition(std::string_view topic, int32_t partition) {
  return absl::NotFoundError(
      fmt::format("memory bus has no partition {} [{}]", topic, partition));
}

// FNV-1a, 32 bits: a stable choice of partition for a key.
uint32_t KeyHash(std::string_view key) {
  uint32_t hash = 2166136261U;
  for (const char c : key) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619U;
  }
  return hash;
}

}  // namespace

class MemoryBus::Source final : public RecordSource {
 public:
  explicit Source(MemoryBus& bus) : bus_(bus) {}

  absl::Status Assign(
      const std::vector<TopicPartitionOffset>& partitions) override {
    std::vector<Position> assigned;
    std::lock_guard lock(bus_.mu_);
    for (const TopicPartitionOffset& p : partitions) {
      const std::vector<Record>* log = bus_.FindLocked(p.topic, p.partition);
      if (log == nullptr) return UnknownPartition(p.topic, p.partition);
      int64_t next = p.offset;
      if (p.offset == kOffsetBeginning) {
        next = bus_.LowLocked(p.topic, p.partition);
      }
      if (p.offset == kOffsetEnd) next = static_cast<int64_t>(log->size());
      if (next < 0) {
        return absl::InvalidArgumentError(
            fmt::format("offset {} for {}", p.offset, p.topic));
      }
      assigned.push_back({p.topic, p.partition, next});
    }
    assigned_ = std::move(assigned);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<Record>> Poll(size_t max_records,
                                           int timeout_ms) override {
    std::unique_lock lock(bus_.mu_);
    bus_.stored_.wait_for(lock,
                          std::chrono::milliseconds(std::max(0, timeout_ms)),
                          [&] { return AnyReadyLocked(); });
    std::vector<Record> records;
    const size_t n = assigned_.size();
    for (size_t i = 0; i < n && records.size() < max_records; ++i) {
      // Starts one partition further each time, so none starves another.
      Position& at = assigned_[(rotate_ + i) % n];
      const std::vector<Record>& log = *bus_.FindLocked(at.topic, at.partition);
      at.next = std::max(at.next, bus_.LowLocked(at.topic, at.partition));
      while (at.next < static_cast<int64_t>(log.size()) &&
             records.size() < max_records) {
        records.push_back(log[static_cast<size_t>(at.next)]);
        ++at.next;
      }
    }
    ++rotate_;
    for (const Position& at : assigned_) read_.emplace(at.topic, at.partition);
    return records;
  }

  std::vector<Record> PollOrBackOff(size_t max_records,
                                    int timeout_ms) override {
    // Poll never fails here.
    return *Poll(max_records, timeout_ms);
  }

  absl::StatusOr<std::pair<int64_t, int64_t>> Watermarks(
      std::string_view topic, int32_t partition, int /*timeout_ms*/) override {
    const int64_t end = bus_.EndOffset(topic, partition);
    if (end < 0) return UnknownPartition(topic, partition);
    std::lock_guard lock(bus_.mu_);
    return std::make_pair(bus_.LowLocked(topic, partition), end);
  }

  [[nodiscard]] absl::StatusOr<std::pair<int64_t, int64_t>> CachedWatermarks(
      std::string_view topic, int32_t partition) const override {
    if (!read_.contains({std::string(topic), partition})) {
      return absl::NotFoundError(fmt::format(
          "no watermarks cached for {} [{}] yet", topic, partition));
    }
    const int64_t end = bus_.EndOffset(topic, partition);
    std::lock_guard lock(bus_.mu_);
    return std::make_pair(bus_.LowLocked(topic, partition), end);
  }

 private:
  struct Position {
    std::string topic;
    int32_t partition = 0;
    int64_t next = 0;
  };

  // REQUIRES: bus_.mu_ held.
  bool AnyReadyLocked() {
    return std::any_of(
        assigned_.begin(), assigned_.end(), [&](const Position& at) {
          return at.next < static_cast<int64_t>(
                               bus_.FindLocked(at.topic, at.partition)->size());
        });
  }

  MemoryBus& bus_;
  std::vector<Position> assigned_;
  size_t rotate_ = 0;
  // Partitions polled at least once (CachedWatermarks).
  std::set<std::pair<std::string, int32_t>> read_;
};

class MemoryBus::Sink final : public RecordSink {
 public:
  explicit Sink(MemoryBus& bus) : bus_(bus) {}
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;
  // Delivers what is queued, as the Kafka producer's destructor does.
  ~Sink() override {
    // A fault set drops them, as failed deliveries; nobody is left to tell.
    DeliverQueued().IgnoreError();
  }

  absl::Status Produce(std::string_view topic, int32_t partition,
                       std::string_view key, std::string_view value) override {
    std::lock_guard lock(bus_.mu_);
    if (bus_.refuse_produce_) {
      return absl::UnavailableError("memory bus refuses Produce (fault set)");
    }
    auto it = bus_.topics_.find(topic);
    if (it == bus_.topics_.end()) return UnknownPartition(topic, partition);
    const auto count = static_cast<int32_t>(it->second.size());
    if (partition == kAnyPartition) {
      partition =
          static_cast<int32_t>(KeyHash(key) % static_cast<uint32_t>(count));
    }
    if (partition < 0 || partition >= count) {
      return UnknownPartition(topic, partition);
    }
    queued_.push_back(Record{.topic = std::string(topic),
                             .partition = partition,
                             .key = std::string(key),
                             .value = std::string(value)});
    return absl::OkStatus();
  }

  absl::Status Flush(int /*timeout_ms*/) override { return DeliverQueued(); }

  absl::StatusOr<int> PartitionCount(std::string_view topic,
                                     int /*timeout_ms*/) override {
    std::lock_guard lock(bus_.mu_);
    auto it = bus_.topics_.find(topic);
    if (it == bus_.topics_.end()) {
      return absl::NotFoundError(
          fmt::format("memory bus has no topic {}", topic));
    }
    return static_cast<int>(it->second.size());
  }

 private:
  absl::Status DeliverQueued() {
    std::lock_guard lock(bus_.mu_);
    std::vector<Record> queued = std::exchange(queued_, {});
    if (bus_.fail_delivery_ && !queued.empty()) {
      bus_.failed_deliveries_ += queued.size();
      return absl::UnavailableError(fmt::format(
          "{} deliveries failed (memory bus fault set)", queued.size()));
    }
    for (Record& record : queued) bus_.StoreLocked(std::move(record));
    return absl::OkStatus();
  }

  MemoryBus& bus_;
  std::vector<Record> queued_;  // guarded by bus_.mu_
};

MemoryBus::MemoryBus(const std::vector<TopicSpec>& specs) {
  for (const TopicSpec& spec : specs) {
    topics_[spec.name].resize(
        static_cast<size_t>(std::max(1, spec.partitions)));
  }
}

absl::Status MemoryBus::CreateTopic(const std::string& name, int partitions) {
  if (partitions < 1) {
    return absl::InvalidArgumentError(
        fmt::format("topic {} needs a partition, not {}", name, partitions));
  }
  std::lock_guard lock(mu_);
  if (topics_.contains(name)) {
    return absl::AlreadyExistsError(fmt::format("topic {}", name));
  }
  topics_[name].resize(static_cast<size_t>(partitions));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RecordSource>> MemoryBus::NewSource(
    const std::string& /*group_id*/) {
  return std::unique_ptr<RecordSource>(std::make_unique<Source>(*this));
}

absl::StatusOr<std::unique_ptr<RecordSink>> MemoryBus::NewSink() {
  return std::unique_ptr<RecordSink>(std::make_unique<Sink>(*this));
}

absl::StatusOr<int64_t> MemoryBus::Append(std::string_view topic,
                                          int32_t partition,
                                          std::string_view key,
                                          std::string_view value) {
  std::lock_guard lock(mu_);
  std::vector<Record>* log = FindLocked(topic, partition);
  if (log == nullptr) return UnknownPartition(topic, partition);
  StoreLocked(Record{.topic = std::string(topic),
                     .partition = partition,
                     .key = std::string(key),
                     .value = std::string(value)});
  return static_cast<int64_t>(log->size()) - 1;
}

std::vector<Record> MemoryBus::Read(std::string_view topic, int32_t partition,
                                    int64_t from) const {
  std::lock_guard lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end() || partition < 0 ||
      static_cast<size_t>(partition) >= it->second.size()) {
    return {};
  }
  const std::vector<Record>& log = it->second[static_cast<size_t>(partition)];
  const auto start =
      static_cast<size_t>(std::max<int64_t>(LowLocked(topic, partition), from));
  if (start >= log.size()) return {};
  return {log.begin() + static_cast<std::ptrdiff_t>(start), log.end()};
}

int64_t MemoryBus::EndOffset(std::string_view topic, int32_t partition) const {
  std::lock_guard lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end() || partition < 0 ||
      static_cast<size_t>(partition) >= it->second.size()) {
    return -1;
  }
  return static_cast<int64_t>(
      it->second[static_cast<size_t>(partition)].size());
}

absl::Status MemoryBus::DeleteBefore(std::string_view topic, int32_t partition,
                                     int64_t offset) {
  std::lock_guard lock(mu_);
  if (FindLocked(topic, partition) == nullptr) {
    return UnknownPartition(topic, partition);
  }
  int64_t& low = low_[{std::string(topic), partition}];
  low = std::max(low, offset);
  return absl::OkStatus();
}

int64_t MemoryBus::LowLocked(std::string_view topic, int32_t partition) const {
  auto it = low_.find({std::string(topic), partition});
  return it == low_.end() ? 0 : it->second;
}

void MemoryBus::set_refuse_produce(bool refuse) {
  std::lock_guard lock(mu_);
  refuse_produce_ = refuse;
}

void MemoryBus::set_fail_delivery(bool fail) {
  std::lock_guard lock(mu_);
  fail_delivery_ = fail;
}

uint64_t MemoryBus::failed_deliveries() const {
  std::lock_guard lock(mu_);
  return failed_deliveries_;
}

std::vector<Record>* MemoryBus::FindLocked(std::string_view topic,
                                           int32_t partition) {
  auto it = topics_.find(topic);
  if (it == topics_.end() || partition < 0 ||
      static_cast<size_t>(partition) >= it->second.size()) {
    return nullptr;
  }
  return &it->second[static_cast<size_t>(partition)];
}

void MemoryBus::StoreLocked(Record record) {
  std::vector<Record>& log = *FindLocked(record.topic, record.partition);
  record.offset = static_cast<int64_t>(log.size());
  log.push_back(std::move(record));
  stored_.notify_all();
}

}  // namespace flowsched::bus
