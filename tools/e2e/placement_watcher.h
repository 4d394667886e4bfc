#pragma once

// The benchmark's independent consumer of the placements topic: a thread
// that reads every partition, times each task's first placement after it
// was submitted, keeps the set of running tasks (so the load generator can
// finish real ones) and notes when each round is complete in every
// partition.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "services/bus/consumer.h"
#include "services/bus/kafka_options.h"
#include "services/common/strong_id.h"

namespace flowsched::e2e {

using SteadyTime = std::chrono::steady_clock::time_point;

struct CompletedRound {
  RoundId round_id;
  GraphEpoch graph_epoch;
  SteadyTime seen;  // when the last partition's RoundComplete arrived
};

// Thread-safe: the load generator calls Expect/TakeRunning while the
// consumer thread records decisions.
class PlacementWatcher {
 public:
  // Reads `topic` (all `partitions`) from the beginning.
  static absl::StatusOr<std::unique_ptr<PlacementWatcher>> Start(
      const bus::KafkaOptions& kafka, const std::string& topic,
      int32_t partitions);
  PlacementWatcher(const PlacementWatcher&) = delete;
  PlacementWatcher& operator=(const PlacementWatcher&) = delete;
  ~PlacementWatcher();

  // Call before the task's submission is produced. With `sample`, the time
  // from `submitted` to its first PLACE decision becomes a latency sample.
  void Expect(uint64_t task_id, SteadyTime submitted, bool sample);
  // Removes and returns a random task the decisions put on a machine (0 if
  // none); it is then finished and ignored if it shows up again.
  uint64_t TakeRunning(std::mt19937_64& rng);
  // Puts back a task TakeRunning returned that the caller did not finish.
  void ReturnRunning(uint64_t task_id);

  [[nodiscard]] size_t pending() const;
  [[nodiscard]] uint64_t placements_seen() const;
  // Latency samples in milliseconds, in arrival order.
  [[nodiscard]] std::vector<double> samples_ms() const;
  [[nodiscard]] std::vector<CompletedRound> rounds() const;
  // The first error of the consumer thread (OK while there is none).
  [[nodiscard]] absl::Status error() const;

 private:
  struct Token {
    explicit Token() = default;
  };

 public:
  PlacementWatcher(Token /*token*/, std::unique_ptr<bus::Consumer> consumer);

 private:
  void Loop();
  void Handle(const bus::Record& record, SteadyTime now);
  void AddRunning(uint64_t task_id);
  void RemoveRunning(uint64_t task_id);

  std::unique_ptr<bus::Consumer> consumer_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  struct Pending {
    SteadyTime submitted;
    bool sample = false;
  };
  std::unordered_map<uint64_t, Pending> pending_;       // guarded by mu_
  std::vector<double> samples_ms_;                      // guarded by mu_
  std::vector<uint64_t> running_;                       // guarded by mu_
  std::unordered_map<uint64_t, size_t> running_index_;  // guarded by mu_
  std::unordered_set<uint64_t> finished_;               // guarded by mu_
  uint64_t placements_seen_ = 0;                        // guarded by mu_
  // (round, graph epoch) -> RoundComplete markers seen.
  std::map<std::pair<RoundId, GraphEpoch>, uint32_t>
      markers_;                         // guarded by mu_
  std::vector<CompletedRound> rounds_;  // guarded by mu_
  absl::Status error_;                  // guarded by mu_
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace flowsched::e2e
