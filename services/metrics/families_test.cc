#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "services/metrics/graph_manager_metrics.h"
#include "services/metrics/solver_worker_metrics.h"

namespace flowsched::metrics {
namespace {

using ::testing::Contains;
using ::testing::IsSupersetOf;

const prometheus::MetricFamily* Find(
    const std::vector<prometheus::MetricFamily>& families,
    const std::string& name) {
  for (const auto& family : families) {
    if (family.name == name) return &family;
  }
  return nullptr;
}

// The child of `family` whose label `key` is `value` (nullptr if none).
const prometheus::ClientMetric* Child(const prometheus::MetricFamily& family,
                                      const std::string& key,
                                      const std::string& value) {
  for (const auto& metric : family.metric) {
    for (const auto& label : metric.label) {
      if (label.name == key && label.value == value) return &metric;
    }
  }
  return nullptr;
}

std::set<std::string> Names(const prometheus::Registry& registry) {
  std::set<std::string> names;
  for (const auto& family : registry.Collect()) names.insert(family.name);
  return names;
}

TEST(GraphManagerMetrics, RegistersEveryFamily) {
  prometheus::Registry registry;
  GraphManagerMetrics metrics(registry);
  // The lag family has children (and is collected) once a partition is.
  metrics.consumer_lag.Set("flowsched.events", 0, 0);
  EXPECT_THAT(
      Names(registry),
      IsSupersetOf(
          {"flowsched_round_duration_seconds",
           "flowsched_round_phase_duration_seconds",
           "flowsched_event_to_placement_duration_seconds",
           "flowsched_events_applied_total", "flowsched_dead_letters_total",
           "flowsched_consumer_lag_records", "flowsched_pending_tasks",
           "flowsched_outbox_pending_records", "flowsched_graph_manager_epoch",
           "flowsched_graph_manager_solver_epoch", "flowsched_active",
           "flowsched_decisions_total"}));
}

TEST(GraphManagerMetrics, ObservationsReachCollect) {
  prometheus::Registry registry;
  GraphManagerMetrics metrics(registry);
  metrics.round_duration.Observe(0.25);
  metrics.phase_apply.Observe(0.001);
  metrics.phase_apply.Observe(0.002);
  metrics.events_applied.Increment(3);
  metrics.dead_letters.Count(absl::StatusCode::kInvalidArgument);
  metrics.consumer_lag.Set("flowsched.events", 2, 17);
  metrics.pending_unscheduled.Set(4);
  metrics.epoch.Set(7);
  metrics.active.Set(1);
  metrics.CountDecision(DecisionKind::kMigrate, /*applied=*/false);
  const auto families = registry.Collect();

  const auto* round = Find(families, "flowsched_round_duration_seconds");
  ASSERT_NE(round, nullptr);
  EXPECT_EQ(round->type, prometheus::MetricType::Histogram);
  EXPECT_EQ(round->metric.at(0).histogram.sample_count, 1U);
  EXPECT_DOUBLE_EQ(round->metric.at(0).histogram.sample_sum, 0.25);

  const auto* phases = Find(families, "flowsched_round_phase_duration_seconds");
  ASSERT_NE(phases, nullptr);
  ASSERT_NE(Child(*phases, "phase", "apply"), nullptr);
  EXPECT_EQ(Child(*phases, "phase", "apply")->histogram.sample_count, 2U);
  EXPECT_EQ(Child(*phases, "phase", "sync")->histogram.sample_count, 0U);
  EXPECT_EQ(Child(*phases, "phase", "solve"), nullptr);  // the worker's

  EXPECT_DOUBLE_EQ(Find(families, "flowsched_events_applied_total")
                       ->metric.at(0)
                       .counter.value,
                   3);
  const auto* letters = Find(families, "flowsched_dead_letters_total");
  EXPECT_DOUBLE_EQ(Child(*letters, "code", "invalid_argument")->counter.value,
                   1);
  EXPECT_DOUBLE_EQ(Child(*letters, "code", "internal")->counter.value, 0);
  const auto* lag = Find(families, "flowsched_consumer_lag_records");
  ASSERT_NE(Child(*lag, "partition", "2"), nullptr);
  EXPECT_DOUBLE_EQ(Child(*lag, "partition", "2")->gauge.value, 17);
  EXPECT_DOUBLE_EQ(
      Child(*Find(families, "flowsched_pending_tasks"), "reason", "unscheduled")
          ->gauge.value,
      4);
  EXPECT_DOUBLE_EQ(
      Find(families, "flowsched_graph_manager_epoch")->metric.at(0).gauge.value,
      7);
  EXPECT_DOUBLE_EQ(Find(families, "flowsched_active")->metric.at(0).gauge.value,
                   1);
  double stale_migrations = -1;
  for (const auto& metric :
       Find(families, "flowsched_decisions_total")->metric) {
    std::set<std::string> labels;
    for (const auto& label : metric.label) labels.insert(label.value);
    if (labels == std::set<std::string>{"migrate", "stale"}) {
      stale_migrations = metric.counter.value;
    }
  }
  EXPECT_DOUBLE_EQ(stale_migrations, 1);
}

TEST(GraphManagerMetrics, RegisteringAgainKeepsTheCounts) {
  // A graph manager that steps down and takes over again builds its
  // metrics on the same registry.
  prometheus::Registry registry;
  GraphManagerMetrics first(registry);
  first.events_applied.Increment(5);
  GraphManagerMetrics second(registry);
  second.events_applied.Increment();
  EXPECT_DOUBLE_EQ(first.events_applied.Value(), 6);
  EXPECT_EQ(&first.events_applied, &second.events_applied);
}

TEST(SolverWorkerMetrics, RegistersAndRecords) {
  prometheus::Registry registry;
  SolverWorkerMetrics metrics(registry);
  metrics.phase_solve.Observe(0.01);
  metrics.phase_check.Observe(0.002);
  metrics.phase_extract.Observe(0.003);
  metrics.phase_publish.Observe(0.004);
  metrics.CountPublished(DecisionKind::kPlace);
  metrics.CountPublished(DecisionKind::kPlace);
  metrics.rounds_published.Increment();
  metrics.consumer_lag.Set("flowsched.rounds", 0, 0);
  const auto families = registry.Collect();
  EXPECT_THAT(Names(registry),
              IsSupersetOf({"flowsched_round_phase_duration_seconds",
                            "flowsched_decisions_published_total",
                            "flowsched_solver_rounds_total",
                            "flowsched_solver_worker_epoch", "flowsched_active",
                            "flowsched_dead_letters_total",
                            "flowsched_consumer_lag_records"}));
  const auto* phases = Find(families, "flowsched_round_phase_duration_seconds");
  for (const char* phase : {"solve", "check", "extract", "publish"}) {
    ASSERT_NE(Child(*phases, "phase", phase), nullptr) << phase;
    EXPECT_EQ(Child(*phases, "phase", phase)->histogram.sample_count, 1U)
        << phase;
  }
  EXPECT_DOUBLE_EQ(Child(*Find(families, "flowsched_decisions_published_total"),
                         "kind", "place")
                       ->counter.value,
                   2);
}

TEST(ExponentialBuckets, GrowsByTheFactor) {
  EXPECT_THAT(ExponentialBuckets(0.5, 2, 4),
              ::testing::ElementsAre(0.5, 1, 2, 4));
  EXPECT_THAT(PhaseBuckets(), Contains(0.0001));
}

}  // namespace
}  // namespace flowsched::metrics
