// `flowsched broker`, `flowsched graph-manager`, `flowsched solver-worker`:
// the long-running processes, normally started by `flowsched up`.

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include "services/bus/embedded_broker.h"
#include "services/bus/leader_lease.h"
#include "services/common/clock.h"
#include "services/common/logging.h"
#include "services/common/status_macros.h"
#include "services/graph_manager/graph_manager.h"
#include "services/graph_manager/status_report.h"
#include "services/metrics/families.h"
#include "services/metrics/listen_address.h"
#include "services/metrics/metrics_server.h"
#include "services/metrics/port_file.h"
#include "services/solver_worker/solver_worker.h"
#include "spdlog/spdlog.h"
#include "tools/flowsched/commands.h"
#include "tools/flowsched/ready_marker.h"
#include "tools/flowsched/stop_signal.h"

namespace flowsched::tools {
namespace {

// The process's metrics: the registry the service records into, and the
// endpoint serving it. Without --metrics-address there is no endpoint and
// nothing is recorded.
struct MetricsEndpoint {
  prometheus::Registry registry;
  // Declared after the registry it reads: destroyed first.
  std::unique_ptr<metrics::MetricsServer> server;
  void SetReady(bool ready) {
    if (server) server->SetReady(ready);
  }
  // Where the service records: null when nothing is served.
  prometheus::Registry* recording() {
    return server != nullptr ? &registry : nullptr;
  }
};

// Starts the endpoint of --metrics-address (a no-op without) and writes
// the bound port to <data-dir>/metrics/<name>.port. The address was
// validated by main(); an error means it cannot be served.
absl::Status StartMetrics(const CommonFlags& flags, const std::string& name,
                          MetricsEndpoint& endpoint) {
  if (flags.metrics_address.empty()) return absl::OkStatus();
  FLOWSCHED_ASSIGN_OR_RETURN(
      const metrics::ListenAddress address,
      metrics::ParseListenAddress(flags.metrics_address));
  FLOWSCHED_ASSIGN_OR_RETURN(endpoint.server, metrics::MetricsServer::Start(
                                                  address, endpoint.registry));
  const std::string file_name =
      flags.metrics_name.empty() ? name : flags.metrics_name;
  FLOWSCHED_RETURN_IF_ERROR(metrics::WritePortFile(flags.data_dir, file_name,
                                                   endpoint.server->port()));
  spdlog::info("metrics on http://{}:{}/metrics (port in {})", address.host,
               endpoint.server->port(),
               metrics::PortFilePath(flags.data_dir, file_name));
  return absl::OkStatus();
}

// Runs one service in the foreground until SIGTERM/SIGINT: logging, stop
// handlers, metrics endpoint, broker resolution, creation and the loop,
// with exit codes 2 (bad flags or no brokers) and 1 (failed to start or to
// run). The service is ready (/readyz) once created.
template <typename Service, typename Create>
int RunService(const char* name, const CommonFlags& flags, Create create) {
  InitLogging(name, flags.log_level, flags.log_format);
  const auto& stop = InstallStopHandlers();
  MetricsEndpoint endpoint;
  if (absl::Status started = StartMetrics(flags, name, endpoint);
      !started.ok()) {
    spdlog::error("{} cannot start: {}", name, started.ToString());
    return 1;
  }
  auto kafka = ResolveKafka(flags);
  if (!kafka.ok()) {
    spdlog::error("{}", kafka.status().ToString());
    return 2;
  }
  SystemClock clock;
  absl::StatusOr<std::unique_ptr<Service>> service =
      create(*kafka, clock, endpoint.recording());
  if (!service.ok()) {
    spdlog::error("{} cannot start: {}", name, service.status().ToString());
    return 1;
  }
  // Created: recovered (graph manager) or subscribed (solver worker).
  ReadyMarker ready(flags.data_dir, name);
  endpoint.SetReady(true);
  absl::Status status = (*service)->Run(stop);
  endpoint.SetReady(false);
  if (!status.ok()) {
    spdlog::error("{} stopped: {}", name, status.ToString());
    return 1;
  }
  return 0;
}

// --ha: waits as a standby until this instance holds the leader lease,
// then runs the graph manager until it stops, or steps down (lease lost,
// fenced by a higher epoch) and waits again.
int RunGraphManagerHa(const CommonFlags& flags,
                      graph_manager::GraphManagerOptions& options,
                      int session_timeout_ms) {
  constexpr const char* kLeaseGroup = "flowsched-graph-manager-leader";
  InitLogging("graph-manager", flags.log_level, flags.log_format);
  const auto& stop = InstallStopHandlers();
  MetricsEndpoint endpoint;
  if (absl::Status started = StartMetrics(flags, "graph-manager", endpoint);
      !started.ok()) {
    spdlog::error("graph-manager cannot start: {}", started.ToString());
    return 1;
  }
  // Standby until a manager runs (it then keeps the gauge itself).
  prometheus::Gauge* active = endpoint.recording() != nullptr
                                  ? &metrics::ActiveGauge(endpoint.registry)
                                  : nullptr;
  options.metrics_registry = endpoint.recording();
  auto kafka = ResolveKafka(flags);
  if (!kafka.ok()) {
    spdlog::error("{}", kafka.status().ToString());
    return 2;
  }
  options.kafka = *kafka;
  options.topics = Topics(flags);
  options.data_dir = flags.data_dir;
  std::error_code ec;
  std::filesystem::create_directories(flags.data_dir, ec);
  SystemClock clock;
  // Ready as a member of the leader group, active or standby.
  std::optional<ReadyMarker> ready;
  while (!stop.load()) {
    bus::KafkaOptions lease_kafka = *kafka;
    lease_kafka.client_id = "flowsched-graph-manager-lease";
    auto lease = bus::LeaderLease::Create(lease_kafka, options.topics.leader,
                                          kLeaseGroup, session_timeout_ms);
    if (!lease.ok()) {
      spdlog::error("graph-manager cannot join the leader group: {}",
                    lease.status().ToString());
      return 1;
    }
    if (!ready.has_value()) ready.emplace(flags.data_dir, "graph-manager");
    spdlog::info("standby: waiting for the leader lease ({})",
                 options.topics.leader);
    if (active != nullptr) active->Set(0);
    int64_t last_status_us = 0;
    while (!stop.load() && !(*lease)->Poll(200)) {
      if (SteadyMicros() - last_status_us > 1'000'000) {
        last_status_us = SteadyMicros();
        v1::GraphManagerStatus standby;
        standby.set_role("standby");
        standby.set_pid(::getpid());
        standby.set_updated_time_us(clock.NowMicros());
        graph_manager::WriteStatusFile(flags.data_dir + "/status.json",
                                       standby)
            .IgnoreError();  // informational only
      }
    }
    if (stop.load()) return 0;
    const int64_t acquired_us = SteadyMicros();
    auto manager =
        graph_manager::GraphManager::Create(options, clock, lease->get());
    if (!manager.ok()) {
      spdlog::error("graph-manager cannot start: {}",
                    manager.status().ToString());
      return 1;
    }
    spdlog::info("active: took over in {:.1f} ms after acquiring the lease",
                 static_cast<double>(SteadyMicros() - acquired_us) / 1000.0);
    endpoint.SetReady(true);
    absl::Status status = (*manager)->Run(stop);
    endpoint.SetReady(false);
    if (status.code() == absl::StatusCode::kAborted) {
      spdlog::warn("stepping down to standby: {}", status.ToString());
      continue;  // the manager and then the lease are released here
    }
    if (!status.ok()) {
      spdlog::error("graph-manager stopped: {}", status.ToString());
      return 1;
    }
    return 0;
  }
  return 0;
}

}  // namespace

CommandMain AddBrokerCommand(CLI::App& app, CommonFlags& flags) {
  auto* cmd = app.add_subcommand(
      "broker",
      "Run the embedded Kafka broker (librdkafka's mock cluster) on "
      "127.0.0.1 until SIGTERM; writes <data-dir>/bootstrap");
  auto broker_count = std::make_shared<int>(3);
  cmd->add_option("--broker-count", *broker_count, "Number of brokers")
      ->check(CLI::Range(1, 9))
      ->capture_default_str();
  return [&flags, broker_count]() {
    InitLogging("broker", flags.log_level, flags.log_format);
    const auto& stop = InstallStopHandlers();
    // No metrics of its own: /healthz and /readyz for orchestration.
    MetricsEndpoint endpoint;
    if (absl::Status started = StartMetrics(flags, "broker", endpoint);
        !started.ok()) {
      spdlog::error("broker cannot start: {}", started.ToString());
      return 1;
    }
    endpoint.SetReady(true);
    std::error_code ec;
    std::filesystem::create_directories(flags.data_dir, ec);
    bus::EmbeddedBrokerOptions options;
    options.broker_count = *broker_count;
    options.topics = Topics(flags);
    options.bootstrap_file = BootstrapFile(flags);
    absl::Status status = bus::ServeEmbeddedBroker(options, stop);
    if (!status.ok()) {
      spdlog::error("broker failed: {}", status.ToString());
      return 1;
    }
    return 0;
  };
}

CommandMain AddGraphManagerCommand(CLI::App& app, CommonFlags& flags) {
  auto* cmd = app.add_subcommand(
      "graph-manager",
      "Run the graph manager: events -> cluster state -> flow network -> "
      "rounds; applies decisions");
  auto options = std::make_shared<graph_manager::GraphManagerOptions>();
  AddInitialPolicyOption(*cmd, options->policy);
  cmd->add_option("--round-timeout-ms", options->round_timeout_ms,
                  "Re-cut a round as a snapshot when its results take longer")
      ->check(CLI::Range(100, 3'600'000))
      ->capture_default_str();
  cmd->add_option("--gang-hold-after-ms", options->gang_hold_after_ms,
                  "Hold free room for a gang whose oldest task waited this "
                  "long (0: never)")
      ->check(CLI::Range(int64_t{0}, int64_t{86'400'000}))
      ->capture_default_str();
  cmd->add_option("--cut-every-events", options->cut_every_events,
                  "Deterministic rounds: cut a round after every N events of "
                  "events partition 0 (0: rounds follow the clock)")
      ->capture_default_str();
  cmd->add_flag("--cut-at-ticks", options->cut_at_ticks,
                "Deterministic rounds: cut a round at each Tick event");
  auto ha = std::make_shared<bool>(false);
  cmd->add_flag("--ha", *ha,
                "High availability: join the graph managers' leader group "
                "and stay standby until this instance holds the lease (a "
                "standby takes over one to two lease sessions after the "
                "active one dies; each takeover claims a higher epoch that "
                "fences the old)");
  auto lease_session_ms = std::make_shared<int>(6000);
  cmd->add_option("--lease-session-timeout-ms", *lease_session_ms,
                  "With --ha: how long the group coordinator waits for a "
                  "silent active instance before giving the lease to a "
                  "standby (the broker's group.min.session.timeout.ms, 6000 "
                  "by default in Kafka, bounds it from below)")
      ->check(CLI::Range(1000, 300'000))
      ->capture_default_str();
  cmd->add_option("--max-batch", options->max_batch_records,
                  "Records applied per RocksDB batch")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  cmd->add_option("--max-tasks-per-job", options->limits.max_tasks_per_job,
                  "Jobs with more tasks are rejected")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  cmd->add_option("--max-task-slots", options->limits.max_task_slots,
                  "Machines with more slots are rejected")
      ->check(CLI::Range(1, 100'000))
      ->capture_default_str();
  return [&flags, options, ha, lease_session_ms]() {
    if (*ha) return RunGraphManagerHa(flags, *options, *lease_session_ms);
    return RunService<graph_manager::GraphManager>(
        "graph-manager", flags,
        [&](const bus::KafkaOptions& kafka, const Clock& clock,
            prometheus::Registry* registry) {
          options->metrics_registry = registry;
          options->kafka = kafka;
          options->topics = Topics(flags);
          options->data_dir = flags.data_dir;
          return graph_manager::GraphManager::Create(*options, clock);
        });
  };
}

CommandMain AddSolverWorkerCommand(CLI::App& app, CommonFlags& flags) {
  auto* cmd = app.add_subcommand(
      "solver-worker",
      "Run the solver worker: rounds -> min-cost flow -> checked placements");
  auto options = std::make_shared<solver_worker::SolverWorkerOptions>();
  cmd->add_option("--algorithm", options->algorithm,
                  "incremental (repair each round; cold starts by "
                  "cost_scaling), or cost_scaling / ssp from scratch")
      ->capture_default_str();
  cmd->add_flag("--standby", options->standby,
                "Active/standby failover: join the consumer group "
                "<rounds topic>.solvers; only the member holding the rounds "
                "partition solves, the others take over when it dies. Every "
                "worker sharing the rounds topic must use it (`flowsched up "
                "--solver-workers N` does)");
  cmd->add_option("--session-timeout-ms", options->session_timeout_ms,
                  "With --standby: how long a silent active worker keeps "
                  "the partition (the takeover delay after a crash)")
      ->check(CLI::Range(1000, 300'000))
      ->capture_default_str();
  return [&flags, options]() {
    return RunService<solver_worker::SolverWorker>(
        "solver-worker", flags,
        [&](const bus::KafkaOptions& kafka, const Clock& clock,
            prometheus::Registry* registry) {
          options->metrics_registry = registry;
          options->kafka = kafka;
          options->topics = Topics(flags);
          return solver_worker::SolverWorker::Create(*options, clock);
        });
  };
}

}  // namespace flowsched::tools
