#include "services/metrics/solver_worker_metrics.h"

namespace flowsched::metrics {
namespace {

prometheus::Family<prometheus::Counter>& SolverRounds(
    prometheus::Registry& registry) {
  return prometheus::BuildCounter()
      .Name("flowsched_solver_rounds_total")
      .Help(
          "Rounds solved by the solver worker, by outcome (published, or "
          "rejected: the solver failed or the checker refused the flow)")
      .Register(registry);
}

}  // namespace

SolverWorkerMetrics::SolverWorkerMetrics(prometheus::Registry& registry)
    : phase_solve(RoundPhase(registry, "solve")),
      phase_check(RoundPhase(registry, "check")),
      phase_extract(RoundPhase(registry, "extract")),
      phase_publish(RoundPhase(registry, "publish")),
      rounds_published(SolverRounds(registry).Add({{"outcome", "published"}})),
      rounds_rejected(SolverRounds(registry).Add({{"outcome", "rejected"}})),
      dead_letters(registry),
      consumer_lag(registry),
      epoch(prometheus::BuildGauge()
                .Name("flowsched_solver_worker_epoch")
                .Help("The solver worker's epoch (one per start; as a "
                      "float64: low digits are rounded)")
                .Register(registry)
                .Add({})),
      active(ActiveGauge(registry)) {
  auto& family = prometheus::BuildCounter()
                     .Name("flowsched_decisions_published_total")
                     .Help(
                         "Decisions published by the solver worker, by kind "
                         "(place, preempt, migrate)")
                     .Register(registry);
  for (size_t i = 0; i < kDecisionKinds; ++i) {
    decisions_published[i] = &family.Add({{"kind", kDecisionKindNames[i]}});
  }
}

}  // namespace flowsched::metrics
