#pragma once

// The typed configuration of every flowsched service: one section per
// service plus the shared Kafka connection and the scheduling policy. A
// default-constructed Config holds exactly the defaults of the command-line
// flags (config_defaults_test checks them against the flag structs).
//
// YAML layout, key names and limits: config_schema.h; the annotated example
// is deploy/flowsched.example.yaml.

#include <cstdint>
#include <map>
#include <string>

namespace flowsched::config {

// Root flags every command shares (tools/flowsched/common_flags.h).
struct CommonConfig {
  std::string brokers;  // empty: the embedded broker of data_dir
  std::string data_dir = "flowsched-data";
  std::string topic_prefix = "flowsched.";
  bool legacy_broker = false;
  std::map<std::string, std::string> kafka;  // extra librdkafka settings
  std::string log_level = "info";
  std::string log_format = "text";
  std::string metrics_address;  // empty: no metrics endpoint
  bool operator==(const CommonConfig&) const = default;
};

// `flowsched broker` (the embedded broker).
struct BrokerConfig {
  int64_t broker_count = 3;
  bool operator==(const BrokerConfig&) const = default;
};

// `flowsched graph-manager`.
struct GraphManagerConfig {
  int64_t round_timeout_ms = 15'000;
  int64_t gang_hold_after_ms = 60'000;
  int64_t cut_every_events = 0;
  bool cut_at_ticks = false;
  bool ha = false;
  int64_t lease_session_timeout_ms = 6'000;
  int64_t max_batch = 5'000;
  int64_t max_tasks_per_job = 100'000;
  int64_t max_task_slots = 1'000;
  bool operator==(const GraphManagerConfig&) const = default;
};

// `flowsched solver-worker`.
struct SolverWorkerConfig {
  std::string algorithm = "incremental";
  bool standby = false;
  int64_t session_timeout_ms = 6'000;
  bool operator==(const SolverWorkerConfig&) const = default;
};

// `flowsched up` (what it starts; the services take their own sections).
struct UpConfig {
  int64_t solver_workers = 0;  // 0: as many as the last `up` started, >= 1
  bool operator==(const UpConfig&) const = default;
};

// The graph manager's initial policy (a store keeps its active one) and
// that policy's tunables, validated against PolicyParameters(name).
struct PolicyConfig {
  std::string name = "load-spreading";
  std::map<std::string, double> parameters;
  bool operator==(const PolicyConfig&) const = default;
};

struct Config {
  CommonConfig common;
  BrokerConfig broker;
  GraphManagerConfig graph_manager;
  SolverWorkerConfig solver_worker;
  UpConfig up;
  PolicyConfig policy;
  bool operator==(const Config&) const = default;
};

}  // namespace flowsched::config
