#include "tools/e2e/placement_watcher.h"

#include <utility>

#include "flowsched/v1/placements.pb.h"
#include "services/common/status_macros.h"

namespace flowsched::e2e {

absl::StatusOr<std::unique_ptr<PlacementWatcher>> PlacementWatcher::Start(
    const bus::KafkaOptions& kafka, const std::string& topic,
    int32_t partitions) {
  bus::KafkaOptions options = kafka;
  options.client_id = "flowsched-bench-e2e";
  FLOWSCHED_ASSIGN_OR_RETURN(auto consumer,
                             bus::Consumer::Create(options, "flowsched-bench"));
  std::vector<bus::TopicPartitionOffset> assignment;
  for (int32_t p = 0; p < partitions; ++p) {
    assignment.push_back({topic, p, bus::kOffsetBeginning});
  }
  FLOWSCHED_RETURN_IF_ERROR(consumer->Assign(assignment));
  auto watcher =
      std::make_unique<PlacementWatcher>(Token{}, std::move(consumer));
  watcher->thread_ = std::thread([w = watcher.get()] { w->Loop(); });
  return watcher;
}

PlacementWatcher::PlacementWatcher(Token /*token*/,
                                   std::unique_ptr<bus::Consumer> consumer)
    : consumer_(std::move(consumer)) {}

PlacementWatcher::~PlacementWatcher() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void PlacementWatcher::Loop() {
  while (!stop_.load()) {
    auto records = consumer_->Poll(10'000, 20);
    // One timestamp per fetched batch: the moment the decisions became
    // visible to this consumer.
    const SteadyTime now = std::chrono::steady_clock::now();
    if (!records.ok()) {
      std::lock_guard lock(mu_);
      if (error_.ok()) error_ = records.status();
      continue;
    }
    for (const bus::Record& record : *records) Handle(record, now);
  }
}

void PlacementWatcher::Handle(const bus::Record& record, SteadyTime now) {
  v1::PlacementRecord message;
  if (!message.ParseFromString(record.value)) return;  // not ours to judge
  std::lock_guard lock(mu_);
  if (message.has_round_complete()) {
    const v1::RoundComplete& done = message.round_complete();
    const RoundId round(done.round_id());
    const GraphEpoch graph_epoch(done.graph_epoch());
    uint32_t& seen = markers_[{round, graph_epoch}];
    if (++seen == done.partition_count()) {
      rounds_.push_back({round, graph_epoch, now});
    }
    return;
  }
  if (!message.has_decision()) return;
  const v1::PlacementDecision& d = message.decision();
  switch (d.action()) {
    case v1::ACTION_PLACE: {
      ++placements_seen_;
      if (finished_.contains(d.task_id())) return;
      AddRunning(d.task_id());
      auto it = pending_.find(d.task_id());
      if (it == pending_.end()) return;
      if (it->second.sample) {
        samples_ms_.push_back(std::chrono::duration<double, std::milli>(
                                  now - it->second.submitted)
                                  .count());
      }
      pending_.erase(it);
      return;
    }
    case v1::ACTION_PREEMPT:
      RemoveRunning(d.task_id());
      return;
    default:
      return;  // a migration keeps the task running
  }
}

void PlacementWatcher::AddRunning(uint64_t task_id) {
  if (running_index_.contains(task_id)) return;
  running_index_[task_id] = running_.size();
  running_.push_back(task_id);
}

void PlacementWatcher::RemoveRunning(uint64_t task_id) {
  auto it = running_index_.find(task_id);
  if (it == running_index_.end()) return;
  const size_t index = it->second;
  running_index_.erase(it);
  if (index + 1 != running_.size()) {
    running_[index] = running_.back();
    running_index_[running_[index]] = index;
  }
  running_.pop_back();
}

void PlacementWatcher::Expect(uint64_t task_id, SteadyTime submitted,
                              bool sample) {
  std::lock_guard lock(mu_);
  pending_[task_id] = Pending{submitted, sample};
}

uint64_t PlacementWatcher::TakeRunning(std::mt19937_64& rng) {
  std::lock_guard lock(mu_);
  if (running_.empty()) return 0;
  std::uniform_int_distribution<size_t> pick(0, running_.size() - 1);
  const uint64_t task_id = running_[pick(rng)];
  RemoveRunning(task_id);
  finished_.insert(task_id);
  return task_id;
}

void PlacementWatcher::ReturnRunning(uint64_t task_id) {
  std::lock_guard lock(mu_);
  finished_.erase(task_id);
  AddRunning(task_id);
}

size_t PlacementWatcher::pending() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

uint64_t PlacementWatcher::placements_seen() const {
  std::lock_guard lock(mu_);
  return placements_seen_;
}

std::vector<double> PlacementWatcher::samples_ms() const {
  std::lock_guard lock(mu_);
  return samples_ms_;
}

std::vector<CompletedRound> PlacementWatcher::rounds() const {
  std::lock_guard lock(mu_);
  return rounds_;
}

absl::Status PlacementWatcher::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

}  // namespace flowsched::e2e
