#pragma once

// The metric families both services register, and the bucket layout of
// every flowsched histogram. Registering a family twice on one registry
// (a graph manager that steps down and takes over again) returns the
// existing family and children, so counters keep counting.
//
// Each type below resolves its label children once; the recording calls
// are an atomic update, with no lookups.
// Thread-safety: as prometheus-cpp's metrics (any thread).

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace flowsched::metrics {

// start, start*factor, ..., `count` bounds (kube-scheduler's layout).
[[nodiscard]] prometheus::Histogram::BucketBoundaries ExponentialBuckets(
    double start, double factor, int count);
// 100 us .. ~13 s: round phases.
[[nodiscard]] prometheus::Histogram::BucketBoundaries PhaseBuckets();
// 1 ms .. ~131 s: whole rounds and event-to-placement latency.
[[nodiscard]] prometheus::Histogram::BucketBoundaries LatencyBuckets();

// flowsched_round_phase_duration_seconds{phase}: one child per phase name.
prometheus::Histogram& RoundPhase(prometheus::Registry& registry,
                                  const std::string& phase);

// flowsched_active: 1 while the instance is the active one, 0 on standby.
prometheus::Gauge& ActiveGauge(prometheus::Registry& registry);

// flowsched_dead_letters_total{code}: records sent to the dead-letter
// topic, by the lowercase absl status code of the reason.
class DeadLetterCounters {
 public:
  explicit DeadLetterCounters(prometheus::Registry& registry);
  void Count(absl::StatusCode code);

 private:
  // Indexed by the numeric code (absl's codes run 0..16).
  std::array<prometheus::Counter*, 17> by_code_{};
};

// flowsched_consumer_lag_records{topic,partition}: the partition's high
// watermark minus the next offset the service will consume.
class ConsumerLagGauges {
 public:
  explicit ConsumerLagGauges(prometheus::Registry& registry);
  // Resolves the child on first use of (topic, partition); called at
  // status cadence, not per record.
  void Set(const std::string& topic, int32_t partition, int64_t lag);

 private:
  prometheus::Family<prometheus::Gauge>& family_;
  std::map<std::pair<std::string, int32_t>, prometheus::Gauge*> children_;
};

}  // namespace flowsched::metrics
