// Metrics end to end: `flowsched up --metrics-address 127.0.0.1:0` runs the
// services with their endpoints, a small workload is scheduled, Debian's
// Prometheus server scrapes the services every second, and its query API
// must show the key series; /healthz and /readyz are asked directly.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "services/metrics/http_get.h"
#include "services/metrics/port_file.h"
#include "tests/integration/pipeline_fixture.h"

namespace flowsched::testing {
namespace {

constexpr const char* kServices[] = {"broker", "graph-manager",
                                     "solver-worker"};

// A port free on 127.0.0.1 right now (the kernel's choice).
int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

std::string UrlEncode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof(escaped), "%%%02X", c);
      out += escaped;
    }
  }
  return out;
}

class MetricsPipelineTest : public PipelineTest {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(PROMETHEUS_BINARY)) {
      GTEST_SKIP() << PROMETHEUS_BINARY
                   << " is missing: install Debian's `prometheus` package "
                      "(deploy/install-deps.sh does)";
    }
    up_flags_ = "--metrics-address 127.0.0.1:0";
    PipelineTest::SetUp();
  }

  void TearDown() override {
    if (prometheus_pid_ > 0) {
      ::kill(prometheus_pid_, SIGTERM);
      int status = 0;
      ::waitpid(prometheus_pid_, &status, 0);
    }
    if (IsSkipped()) return;
    if (HasFailure()) {
      std::ifstream log(dir_ + "/prometheus.log");
      std::cerr << "---- prometheus.log ----\n" << log.rdbuf() << "\n";
    }
    PipelineTest::TearDown();
  }

  // The metrics port each service wrote; waits for the files (bounded).
  std::map<std::string, int> ServicePorts() {
    std::map<std::string, int> ports;
    for (int attempt = 0; attempt < 300 && ports.size() < 3; ++attempt) {
      for (const char* service : kServices) {
        auto port = metrics::ReadPortFile(dir_, service);
        if (port.ok()) ports[service] = *port;
      }
      if (ports.size() < 3) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    return ports;
  }

  // Starts Prometheus on a free loopback port scraping `targets` (job ->
  // port) every second; returns when it is ready.
  void StartPrometheus(const std::map<std::string, int>& targets) {
    prometheus_port_ = FreeLoopbackPort();
    ASSERT_GT(prometheus_port_, 0);
    const std::string config = dir_ + "/prometheus.yml";
    {
      std::ofstream out(config);
      out << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
          << "scrape_configs:\n";
      for (const auto& [job, port] : targets) {
        out << "  - job_name: " << job << "\n    static_configs:\n"
            << "      - targets: ['127.0.0.1:" << port << "']\n";
      }
    }
    const std::vector<std::string> args = {
        PROMETHEUS_BINARY, "--config.file=" + config,
        "--storage.tsdb.path=" + dir_ + "/prometheus-data",
        absl::StrCat("--web.listen-address=127.0.0.1:", prometheus_port_),
        "--log.level=warn"};
    const std::string log = dir_ + "/prometheus.log";
    prometheus_pid_ = ::fork();
    ASSERT_GE(prometheus_pid_, 0);
    if (prometheus_pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> argv;
      for (const std::string& arg : args) {
        argv.push_back(const_cast<char*>(arg.c_str()));
      }
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    for (int attempt = 0; attempt < 300; ++attempt) {
      auto ready = metrics::HttpGet(prometheus_port_, "/-/ready", 1000);
      if (ready.ok() && ready->status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "prometheus did not become ready on port " << prometheus_port_;
  }

  // Label value -> sample value of an instant query's vector result
  // (`label` empty: the one sample under ""). Empty on no result.
  std::map<std::string, double> Query(const std::string& promql,
                                      const std::string& label = "") {
    std::map<std::string, double> samples;
    auto response = metrics::HttpGet(
        prometheus_port_, "/api/v1/query?query=" + UrlEncode(promql), 5000);
    if (!response.ok() || response->status != 200) return samples;
    google::protobuf::Value document;
    if (!google::protobuf::util::JsonStringToMessage(response->body, &document)
             .ok()) {
      return samples;
    }
    const auto& data = document.struct_value().fields().at("data");
    for (const auto& result :
         data.struct_value().fields().at("result").list_value().values()) {
      const auto& fields = result.struct_value().fields();
      std::string key;
      if (!label.empty()) {
        const auto& metric = fields.at("metric").struct_value().fields();
        auto it = metric.find(label);
        if (it != metric.end()) key = it->second.string_value();
      }
      double value = 0;
      if (absl::SimpleAtod(
              fields.at("value").list_value().values(1).string_value(),
              &value)) {
        samples[key] = value;
      }
    }
    return samples;
  }

  // Polls `promql` until `accept` holds (bounded); returns the last samples.
  std::map<std::string, double> QueryUntil(
      const std::string& promql, const std::string& label,
      const std::function<bool(const std::map<std::string, double>&)>& accept) {
    std::map<std::string, double> samples;
    for (int attempt = 0; attempt < 60; ++attempt) {
      samples = Query(promql, label);
      if (accept(samples)) return samples;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    ADD_FAILURE() << "no acceptable answer to " << promql;
    return samples;
  }

  pid_t prometheus_pid_ = 0;
  int prometheus_port_ = 0;
};

TEST_F(MetricsPipelineTest, PrometheusScrapesTheKeySeries) {
  const std::map<std::string, int> ports = ServicePorts();
  ASSERT_EQ(ports.size(), 3U) << "port files in " << dir_ << "/metrics";

  // 20 machines, 5 jobs of 4 tasks, and one event naming an unknown job
  // (a dead letter).
  CommandResult machines =
      Flowsched("generate --what machines --machines 20 --slots 2");
  ASSERT_EQ(machines.exit_code, 0) << machines.err;
  CommandResult jobs =
      Flowsched("generate --what jobs --jobs 5 --tasks-per-job 4");
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  Submit(machines.out + jobs.out +
         "{\"task_finished\":{\"job_id\":\"999\",\"task_id\":\"1\"}}\n");
  const v1::GraphManagerStatus status = WaitForStatus(
      [](const v1::GraphManagerStatus& s) {
        return s.tasks() == 20 && s.tasks_waiting() == 0 &&
               s.events_rejected() == 1;
      },
      60, "20 tasks placed, 1 event rejected");
  const double events_applied = static_cast<double>(status.events_applied());

  for (const auto& [service, port] : ports) {
    for (const char* path : {"/healthz", "/readyz"}) {
      auto response = metrics::HttpGet(port, path);
      ASSERT_TRUE(response.ok()) << service << path << response.status();
      EXPECT_EQ(response->status, 200) << service << path;
    }
  }

  StartPrometheus(ports);
  if (HasFatalFailure()) return;
  auto positive = [](const std::map<std::string, double>& s) {
    return !s.empty() && s.begin()->second > 0;
  };

  QueryUntil("up", "job", [](const std::map<std::string, double>& s) {
    return s.size() == 3 && s.at("broker") == 1 && s.at("graph-manager") == 1 &&
           s.at("solver-worker") == 1;
  });
  QueryUntil("flowsched_round_duration_seconds_count", "", positive);
  const auto phases = QueryUntil(
      "sum by (phase) (flowsched_round_phase_duration_seconds_count)", "phase",
      [](const std::map<std::string, double>& s) { return s.size() == 6; });
  for (const char* phase :
       {"sync", "solve", "check", "extract", "publish", "apply"}) {
    ASSERT_EQ(phases.count(phase), 1U) << phase;
    EXPECT_GT(phases.at(phase), 0) << phase;
  }
  EXPECT_EQ(QueryUntil("flowsched_events_applied_total", "", positive)[""],
            events_applied);
  EXPECT_EQ(
      QueryUntil("sum(flowsched_dead_letters_total{job=\"graph-manager\"})", "",
                 positive)[""],
      1);
  EXPECT_EQ(QueryUntil("flowsched_event_to_placement_duration_seconds_count",
                       "", positive)[""],
            20);
  EXPECT_EQ(QueryUntil("flowsched_decisions_total{kind=\"place\",outcome="
                       "\"applied\"}",
                       "", positive)[""],
            20);
  EXPECT_EQ(QueryUntil("flowsched_graph_manager_epoch", "", positive)[""],
            static_cast<double>(status.epoch()));
  QueryUntil("flowsched_solver_worker_epoch", "", positive);
  const auto active = QueryUntil(
      "flowsched_active", "job",
      [](const std::map<std::string, double>& s) { return s.size() == 2; });
  EXPECT_EQ(active.at("graph-manager"), 1);
  EXPECT_EQ(active.at("solver-worker"), 1);
  const auto pending = QueryUntil(
      "flowsched_pending_tasks", "reason",
      [](const std::map<std::string, double>& s) { return s.size() == 2; });
  EXPECT_EQ(pending.at("unscheduled") + pending.at("awaiting_round"), 0);
  QueryUntil("count(flowsched_consumer_lag_records{topic=~\".*events\"})", "",
             [](const std::map<std::string, double>& s) {
               return !s.empty() && s.begin()->second == 4;
             });
}

}  // namespace
}  // namespace flowsched::testing
