#pragma once

// The graph manager's metric families (services/metrics/README.md lists
// them), registered on a registry the caller owns, each label child
// resolved at construction.
//
// Thread-safety: as prometheus-cpp's metrics (any thread).

#include <array>
#include <cstdint>

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "services/metrics/decision_kind.h"
#include "services/metrics/families.h"

namespace flowsched::metrics {

struct GraphManagerMetrics {
  explicit GraphManagerMetrics(prometheus::Registry& registry);

  // Counts one decision of a round being applied.
  void CountDecision(DecisionKind kind, bool applied) {
    (applied ? decisions_applied : decisions_stale)[static_cast<size_t>(kind)]
        ->Increment();
  }

  // From the start of a cut to its decisions applied.
  prometheus::Histogram& round_duration;
  // The policy's network updates since the previous cut (phase="sync"),
  // the cut and publication of the round ("publish"), applying its
  // decisions to the state ("apply").
  prometheus::Histogram& phase_sync;
  prometheus::Histogram& phase_publish;
  prometheus::Histogram& phase_apply;
  // From applying the event that made a task wait to applying its
  // placement.
  prometheus::Histogram& event_to_placement;
  prometheus::Counter& events_applied;
  DeadLetterCounters dead_letters;
  ConsumerLagGauges consumer_lag;
  // Waiting tasks: left unscheduled by the last applied round, or waiting
  // for their first round since they (re)entered the queue.
  prometheus::Gauge& pending_unscheduled;
  prometheus::Gauge& pending_awaiting_round;
  prometheus::Gauge& outbox_ledger;
  prometheus::Gauge& outbox_dead_letters;
  prometheus::Gauge& epoch;
  prometheus::Gauge& solver_epoch;  // the worker epoch rounds go to
  prometheus::Gauge& active;
  std::array<prometheus::Counter*, kDecisionKinds> decisions_applied{};
  std::array<prometheus::Counter*, kDecisionKinds> decisions_stale{};
};

}  // namespace flowsched::metrics
