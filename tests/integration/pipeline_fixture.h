#pragma once

// Runs the real flowsched processes for a test: `flowsched up` on a fresh
// data directory (embedded broker, graph manager, solver worker as separate
// processes on 127.0.0.1), helpers to call the CLI and kcat, and
// `flowsched down` afterwards. Logs are printed when a test failed.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "flowsched/v1/status.pb.h"
#include "gtest/gtest.h"

namespace flowsched::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class PipelineTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Runs `flowsched <args> --data-dir <dir>` with `input` on stdin.
  CommandResult Flowsched(const std::string& args,
                          const std::string& input = "");
  // Runs a shell command line as is.
  CommandResult Shell(const std::string& command_line,
                      const std::string& input = "");
  // Submits JSON lines; expects success.
  void Submit(const std::string& json_lines);
  // Polls status.json until `done` holds; fails the test after timeout.
  v1::GraphManagerStatus WaitForStatus(
      const std::function<bool(const v1::GraphManagerStatus&)>& done,
      int timeout_s, const std::string& what);
  // The same for the graph manager whose data directory is `dir` (a second
  // instance in failover tests).
  v1::GraphManagerStatus WaitForStatusIn(
      const std::string& dir,
      const std::function<bool(const v1::GraphManagerStatus&)>& done,
      int timeout_s, const std::string& what);
  // task id -> machine id (0 while waiting), read from the graph manager's
  // RocksDB through `flowsched inspect tasks`.
  std::map<uint64_t, uint64_t> TaskPlacements();
  // Exactly once: the store holds `tasks` tasks, each placed (none
  // waiting), and no machine runs more than `slots`.
  void ExpectAllPlacedWithinSlots(uint64_t tasks, uint64_t slots);
  // The broker's bootstrap address (host:port).
  [[nodiscard]] std::string Bootstrap() const;
  // The pid `flowsched up` recorded for "broker", "graph-manager" or
  // "solver-worker"; 0 if none.
  [[nodiscard]] int ServicePid(const std::string& name) const;
  // SIGKILLs the service and waits until it is gone.
  void KillService(const std::string& name);
  // The epoch a solver worker announced in its log ("solver worker epoch N
  // using ..."), the latest if it restarted; 0 if none yet.
  [[nodiscard]] uint64_t WorkerEpoch(const std::string& name) const;
  // With `up --solver-workers 2`: the worker ("solver-worker" or
  // "solver-worker-2") whose epoch is `solver_epoch`; "" if neither.
  [[nodiscard]] std::string SolverWorkerWithEpoch(uint64_t solver_epoch) const;
  // SIGTERMs the service (a clean stop) and waits until it is gone.
  void StopService(const std::string& name);

  // The broker the services and clients use: the embedded one, or, in a
  // binary built with FLOWSCHED_TEST_ON_KAFKA09 (flowsched_process_test's
  // KAFKA09), a real Apache Kafka 0.9.0.1 with ZooKeeper started by
  // deploy/kafka09.sh for each test, with `--brokers ... --legacy-broker`
  // on every command.
  [[nodiscard]] static bool OnKafka09();
  // Kafka 0.9 only: stops and starts the broker; its log stays on disk.
  void RestartKafka09();

  std::string dir_;
  std::string broker_flags_;  // appended to every flowsched command
  std::string up_flags_;      // appended to `flowsched up`
  int command_counter_ = 0;

 private:
  void StartKafka09();
  void StopKafka09();
  std::string kafka09_dir_;        // its data, under dir_
  std::string kafka09_bootstrap_;  // host:port
};

}  // namespace flowsched::testing
