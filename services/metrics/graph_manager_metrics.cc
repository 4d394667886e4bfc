#include "services/metrics/graph_manager_metrics.h"

#include <string>

namespace flowsched::metrics {
namespace {

prometheus::Family<prometheus::Gauge>& PendingTasks(
    prometheus::Registry& registry) {
  return prometheus::BuildGauge()
      .Name("flowsched_pending_tasks")
      .Help(
          "Waiting tasks by reason: unscheduled (the last applied round "
          "left them waiting) or awaiting_round (not in a round yet)")
      .Register(registry);
}

prometheus::Family<prometheus::Gauge>& OutboxPending(
    prometheus::Registry& registry) {
  return prometheus::BuildGauge()
      .Name("flowsched_outbox_pending_records")
      .Help(
          "Records committed to the store but not yet acknowledged by the "
          "brokers, by outbox (ledger, dead_letters)")
      .Register(registry);
}

prometheus::Family<prometheus::Counter>& Decisions(
    prometheus::Registry& registry) {
  return prometheus::BuildCounter()
      .Name("flowsched_decisions_total")
      .Help(
          "Decisions of rounds applied by the graph manager, by kind "
          "(place, preempt, migrate) and outcome (applied, stale)")
      .Register(registry);
}

}  // namespace

GraphManagerMetrics::GraphManagerMetrics(prometheus::Registry& registry)
    : round_duration(prometheus::BuildHistogram()
                         .Name("flowsched_round_duration_seconds")
                         .Help("Solver round from the start of its cut to its "
                               "decisions applied by the graph manager")
                         .Register(registry)
                         .Add({}, LatencyBuckets())),
      phase_sync(RoundPhase(registry, "sync")),
      phase_publish(RoundPhase(registry, "publish")),
      phase_apply(RoundPhase(registry, "apply")),
      event_to_placement(
          prometheus::BuildHistogram()
              .Name("flowsched_event_to_placement_duration_seconds")
              .Help("From applying the event that made a task wait "
                    "(submission, preemption, machine loss) to applying its "
                    "placement")
              .Register(registry)
              .Add({}, LatencyBuckets())),
      events_applied(prometheus::BuildCounter()
                         .Name("flowsched_events_applied_total")
                         .Help("Cluster events applied to the state")
                         .Register(registry)
                         .Add({})),
      dead_letters(registry),
      consumer_lag(registry),
      pending_unscheduled(
          PendingTasks(registry).Add({{"reason", "unscheduled"}})),
      pending_awaiting_round(
          PendingTasks(registry).Add({{"reason", "awaiting_round"}})),
      outbox_ledger(OutboxPending(registry).Add({{"outbox", "ledger"}})),
      outbox_dead_letters(
          OutboxPending(registry).Add({{"outbox", "dead_letters"}})),
      epoch(prometheus::BuildGauge()
                .Name("flowsched_graph_manager_epoch")
                .Help("The graph manager's epoch (one per start or takeover)")
                .Register(registry)
                .Add({})),
      solver_epoch(prometheus::BuildGauge()
                       .Name("flowsched_graph_manager_solver_epoch")
                       .Help("The solver worker epoch rounds are addressed to "
                             "(as a float64: low digits are rounded)")
                       .Register(registry)
                       .Add({})),
      active(ActiveGauge(registry)) {
  auto& decisions = Decisions(registry);
  for (size_t i = 0; i < kDecisionKinds; ++i) {
    decisions_applied[i] = &decisions.Add(
        {{"kind", kDecisionKindNames[i]}, {"outcome", "applied"}});
    decisions_stale[i] =
        &decisions.Add({{"kind", kDecisionKindNames[i]}, {"outcome", "stale"}});
  }
}

}  // namespace flowsched::metrics
