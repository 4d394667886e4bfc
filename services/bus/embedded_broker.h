#pragma once

// An in-process Kafka cluster for tests and local runs: librdkafka's mock
// cluster, a real Kafka protocol peer listening on 127.0.0.1.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/bus/kafka_options.h"
#include "services/bus/topics.h"

struct rd_kafka_mock_cluster_s;

namespace flowsched::bus {

class EmbeddedBroker {
 public:
  // Starts broker_count brokers (ids 1..broker_count) and creates each
  // topic with replication min(3, broker_count). InvalidArgument for a bad
  // count or topic spec, Internal if librdkafka cannot start the cluster.
  static absl::StatusOr<std::unique_ptr<EmbeddedBroker>> Start(
      int broker_count, const std::vector<TopicSpec>& topics);

  EmbeddedBroker(const EmbeddedBroker&) = delete;
  EmbeddedBroker& operator=(const EmbeddedBroker&) = delete;
  ~EmbeddedBroker();

  // "127.0.0.1:port,127.0.0.1:port,..."
  [[nodiscard]] std::string bootstrap_servers() const;
  [[nodiscard]] int broker_count() const { return broker_count_; }

  // Disconnects the broker and refuses new connections (-1: all brokers).
  // Partition leadership does not move.
  absl::Status SetBrokerDown(int32_t broker_id);
  absl::Status SetBrokerUp(int32_t broker_id);
  // The next errors.size() requests with this Kafka ApiKey (0 Produce,
  // 1 Fetch, 3 Metadata, ...) fail with these error codes, in order.
  absl::Status PushRequestErrors(int16_t api_key, std::vector<int> errors);
  // Drops the errors still queued for that ApiKey.
  absl::Status ClearRequestErrors(int16_t api_key);
  absl::Status CreateTopic(const TopicSpec& topic);

 private:
  struct MockClusterDeleter {
    void operator()(rd_kafka_mock_cluster_s* cluster) const;
  };
  struct Token {
    explicit Token() = default;
  };

 public:
  explicit EmbeddedBroker(Token /*token*/) {}

 private:
  // Destroyed explicitly in ~EmbeddedBroker: the cluster before its handle.
  KafkaHandlePtr handle_;
  std::unique_ptr<rd_kafka_mock_cluster_s, MockClusterDeleter> cluster_;
  int broker_count_ = 0;
};

struct EmbeddedBrokerOptions {
  int broker_count = 3;
  TopicNames topics;
  // If set, written atomically (tmp + rename) with the bootstrap string and
  // a newline; removed on shutdown. "<bootstrap_file>.control" is the
  // control file (see ApplyControlFile).
  std::string bootstrap_file;
};

// Applies one control line: "down <broker_id>", "up <broker_id>" or
// "errors <api_key> <error_code> <count>". Blank lines and lines starting
// with '#' are OK no-ops; anything else is InvalidArgument.
absl::Status ApplyControlLine(EmbeddedBroker& broker, std::string_view line);

// If `path` exists: renames it aside (so a writer's next file is not lost),
// applies each line, logs each result, and deletes it. Bad lines are logged
// and skipped. Returns the number of lines applied successfully, or -1 if
// there was no file.
int ApplyControlFile(EmbeddedBroker& broker, const std::string& path);

// Runs a broker until `stop` becomes true: starts the cluster with the
// default topics, writes options.bootstrap_file, prints
// "bootstrap.servers=<list>" on stdout, and every 100 ms applies
// "<bootstrap_file>.control". Removes the bootstrap file before returning.
absl::Status ServeEmbeddedBroker(const EmbeddedBrokerOptions& options,
                                 const std::atomic<bool>& stop);

}  // namespace flowsched::bus
