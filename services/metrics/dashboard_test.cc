// deploy/grafana/flowsched-dashboard.json parses as JSON, and every metric
// its PromQL expressions name is one the services register.

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/metrics/graph_manager_metrics.h"
#include "services/metrics/solver_worker_metrics.h"

namespace flowsched::metrics {
namespace {

// Every string value of a field named "expr", anywhere in the document.
void CollectExpressions(const google::protobuf::Value& value,
                        std::vector<std::string>& out) {
  if (value.has_struct_value()) {
    for (const auto& [key, field] : value.struct_value().fields()) {
      if (key == "expr" && field.has_string_value()) {
        out.push_back(field.string_value());
      } else {
        CollectExpressions(field, out);
      }
    }
  } else if (value.has_list_value()) {
    for (const auto& item : value.list_value().values()) {
      CollectExpressions(item, out);
    }
  }
}

// Family names, and for histograms the series Prometheus stores.
std::set<std::string> RegisteredSeries() {
  prometheus::Registry registry;
  GraphManagerMetrics graph_manager(registry);
  SolverWorkerMetrics solver_worker(registry);
  // Collected once it has a child (a partition consumed).
  graph_manager.consumer_lag.Set("flowsched.events", 0, 0);
  std::set<std::string> names;
  for (const auto& family : registry.Collect()) {
    names.insert(family.name);
    if (family.type == prometheus::MetricType::Histogram) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        names.insert(family.name + suffix);
      }
    }
  }
  return names;
}

TEST(Dashboard, ParsesAndNamesOnlyRegisteredMetrics) {
  std::ifstream in(DASHBOARD_JSON);
  ASSERT_TRUE(in) << DASHBOARD_JSON;
  std::stringstream text;
  text << in.rdbuf();
  google::protobuf::Value document;
  const auto parsed =
      google::protobuf::util::JsonStringToMessage(text.str(), &document);
  ASSERT_TRUE(parsed.ok()) << parsed.ToString();

  std::vector<std::string> expressions;
  CollectExpressions(document, expressions);
  ASSERT_GE(expressions.size(), 10U);

  const std::set<std::string> registered = RegisteredSeries();
  const std::regex metric_name("flowsched_[a-zA-Z0-9_]+");
  std::set<std::string> used;
  for (const std::string& expr : expressions) {
    size_t names_in_expr = 0;
    for (std::sregex_iterator it(expr.begin(), expr.end(), metric_name), end;
         it != end; ++it) {
      ++names_in_expr;
      used.insert(it->str());
      EXPECT_TRUE(registered.count(it->str()) == 1)
          << it->str() << " (in " << expr << ") is not registered";
    }
    EXPECT_GT(names_in_expr, 0U) << expr << " names no flowsched metric";
  }
  // The panels the dashboard promises.
  for (const char* needed :
       {"flowsched_round_phase_duration_seconds_bucket",
        "flowsched_event_to_placement_duration_seconds_bucket",
        "flowsched_pending_tasks", "flowsched_events_applied_total",
        "flowsched_dead_letters_total", "flowsched_consumer_lag_records",
        "flowsched_graph_manager_epoch", "flowsched_solver_worker_epoch"}) {
    EXPECT_EQ(used.count(needed), 1U) << needed << " has no panel";
  }
}

}  // namespace
}  // namespace flowsched::metrics
