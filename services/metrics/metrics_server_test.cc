#include "services/metrics/metrics_server.h"

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/metrics/graph_manager_metrics.h"
#include "services/metrics/http_get.h"
#include "services/metrics/port_file.h"

namespace flowsched::metrics {
namespace {

using ::testing::HasSubstr;

ListenAddress AnyLoopbackPort() { return {.host = "127.0.0.1", .port = 0}; }

TEST(MetricsServer, ServesMetricsHealthAndReadiness) {
  prometheus::Registry registry;
  GraphManagerMetrics metrics(registry);
  metrics.events_applied.Increment(42);
  auto server = MetricsServer::Start(AnyLoopbackPort(), registry);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  ASSERT_GT(port, 0);

  auto scraped = HttpGet(port, "/metrics");
  ASSERT_TRUE(scraped.ok()) << scraped.status();
  EXPECT_EQ(scraped->status, 200);
  EXPECT_THAT(scraped->body, HasSubstr("flowsched_events_applied_total 42"));
  EXPECT_THAT(scraped->body,
              HasSubstr("flowsched_round_phase_duration_seconds_bucket{"));

  auto health = HttpGet(port, "/healthz");
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->status, 200);

  auto not_ready = HttpGet(port, "/readyz");
  ASSERT_TRUE(not_ready.ok()) << not_ready.status();
  EXPECT_EQ(not_ready->status, 503);
  (*server)->SetReady(true);
  auto ready = HttpGet(port, "/readyz");
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(ready->status, 200);
  (*server)->SetReady(false);
  EXPECT_EQ(HttpGet(port, "/readyz")->status, 503);

  auto unknown = HttpGet(port, "/nothing-here");
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_EQ(unknown->status, 404);
}

TEST(MetricsServer, APortInUseIsUnavailable) {
  prometheus::Registry registry;
  auto first = MetricsServer::Start(AnyLoopbackPort(), registry);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = MetricsServer::Start(
      {.host = "127.0.0.1", .port = static_cast<uint16_t>((*first)->port())},
      registry);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("cannot listen"));
}

TEST(PortFile, RoundTrips) {
  const std::string dir =
      ::testing::TempDir() + "/port_file_" +
      ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::remove_all(dir);
  EXPECT_EQ(ReadPortFile(dir, "graph-manager").status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(WritePortFile(dir, "graph-manager", 40123).ok());
  EXPECT_EQ(PortFilePath(dir, "graph-manager"),
            dir + "/metrics/graph-manager.port");
  auto port = ReadPortFile(dir, "graph-manager");
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_EQ(*port, 40123);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace flowsched::metrics
