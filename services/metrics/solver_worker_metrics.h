#pragma once

// The solver worker's metric families (services/metrics/README.md lists
// them), registered on a registry the caller owns, each label child
// resolved at construction.
//
// Thread-safety: as prometheus-cpp's metrics (any thread).

#include <array>

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "services/metrics/decision_kind.h"
#include "services/metrics/families.h"

namespace flowsched::metrics {

struct SolverWorkerMetrics {
  explicit SolverWorkerMetrics(prometheus::Registry& registry);

  void CountPublished(DecisionKind kind) {
    decisions_published[static_cast<size_t>(kind)]->Increment();
  }

  // The min-cost flow solve ("solve"), the optimality checker ("check"),
  // the placement extraction ("extract"), and publishing the decisions and
  // RoundComplete markers ("publish").
  prometheus::Histogram& phase_solve;
  prometheus::Histogram& phase_check;
  prometheus::Histogram& phase_extract;
  prometheus::Histogram& phase_publish;
  prometheus::Counter& rounds_published;
  prometheus::Counter& rounds_rejected;
  DeadLetterCounters dead_letters;
  ConsumerLagGauges consumer_lag;
  prometheus::Gauge& epoch;
  prometheus::Gauge& active;
  std::array<prometheus::Counter*, kDecisionKinds> decisions_published{};
};

}  // namespace flowsched::metrics
