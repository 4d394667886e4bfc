// `flowsched bench e2e`: the end-to-end benchmark of tools/e2e (a workload
// through the embedded broker and the real service processes). Registered
// on `bench` by both bench_command.cc and its LEMON-less stub, so it exists
// in every build.

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "fmt/ostream.h"
#include "tools/e2e/e2e_bench.h"
#include "tools/flowsched/commands.h"
#include "tools/flowsched/lifecycle.h"

namespace flowsched::tools {
namespace {

constexpr char kDefaultDataDir[] = "flowsched-bench-e2e";
// Marks a directory this command created, so it only ever wipes its own.
constexpr char kMarker[] = ".flowsched-bench-e2e";

struct BenchE2eFlags {
  e2e::E2eOptions options;
  std::string csv_path;
  bool keep = false;
};

// Empties the data directory for a fresh run: it must not exist, be empty,
// or hold the marker of an earlier run of this command whose services (left
// running by --keep) have stopped: wiping the directory under them would
// mix their status and topics into this run's.
absl::Status PrepareDataDir(const CommonFlags& flags) {
  namespace fs = std::filesystem;
  const std::string& dir = flags.data_dir;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec) &&
      !fs::exists(fs::path(dir) / kMarker, ec)) {
    return absl::FailedPreconditionError(fmt::format(
        "{} is not empty and was not made by `flowsched bench e2e`; the "
        "benchmark needs a fresh data directory (--data-dir)",
        dir));
  }
  std::vector<std::string> running;
  for (const ServiceState& state : RunningServices(flags)) {
    running.push_back(fmt::format("{} (pid {})", state.name, state.pid->pid));
  }
  if (!running.empty()) {
    return absl::FailedPreconditionError(fmt::format(
        "services of an earlier run still run in {}: {}; stop them with "
        "`flowsched down --data-dir {}` (or pass another --data-dir)",
        dir, absl::StrJoin(running, ", "), dir));
  }
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  std::ofstream marker(fs::path(dir) / kMarker);
  marker << "flowsched bench e2e\n";
  if (ec || !marker.good()) {
    return absl::UnavailableError(fmt::format("cannot create {}", dir));
  }
  return absl::OkStatus();
}

}  // namespace

BenchSubcommand AddBenchE2eCommand(CLI::App& bench, CommonFlags& flags,
                                   CLI::App& root) {
  auto* cmd = bench.add_subcommand(
      "e2e",
      "End to end through the embedded broker and the real graph-manager and "
      "solver-worker processes: event-to-placement latency, graph manager "
      "ingest rate, rounds per second, restart time (tools/e2e/README.md)");
  auto f = std::make_shared<BenchE2eFlags>();
  e2e::E2eOptions& o = f->options;
  cmd->add_option("--machines", o.machines, "Machines")
      ->check(CLI::Range(1, 100'000))
      ->capture_default_str();
  cmd->add_option("--slots", o.slots, "Task slots per machine")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--racks", o.racks, "Racks (0: one per 40 machines)")
      ->capture_default_str();
  cmd->add_option("--tasks", o.tasks,
                  "Tasks running at steady state (0: --utilisation of the "
                  "slots); at most machines x slots")
      ->capture_default_str();
  cmd->add_option("--utilisation", o.utilisation,
                  "Fraction of the slots holding tasks when --tasks is 0")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--jobs", o.jobs,
                  "Jobs the tasks belong to (0: one per 83 tasks, the Google "
                  "trace's mean)")
      ->capture_default_str();
  cmd->add_option("--churn", o.churn_per_s,
                  "Steady state: task arrivals plus completions per second "
                  "(half each)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--duration", o.duration_s, "Steady-state seconds")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--policy", o.policy, "Scheduling policy")
      ->capture_default_str();
  cmd->add_option("--algorithm", o.algorithm, "Solver worker algorithm")
      ->capture_default_str();
  cmd->add_option("--requests", o.requests,
                  "What each task asks for: cpu-mem (250-1000 CPU millis and "
                  "1 GiB: the policy's resource filters on) or none (a slot)")
      ->check(CLI::IsMember({"cpu-mem", "none"}))
      ->capture_default_str();
  cmd->add_option("--restart", o.restart_signal,
                  "Restart the graph manager holding the full state after the "
                  "steady state with SIGTERM (term) or SIGKILL (kill), or not "
                  "(none)")
      ->check(CLI::IsMember({"term", "kill", "none"}))
      ->capture_default_str();
  cmd->add_option("--timeout", o.phase_timeout_s,
                  "Give up when one phase (setup, ingest, placing, draining, "
                  "restart) takes longer, in seconds")
      ->check(CLI::Range(1, 86'400))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Workload seed")->capture_default_str();
  cmd->add_option("--scrape-every", o.scrape_every_s,
                  "Scrape every service's /metrics this often, in seconds "
                  "(at least 0.05), as Prometheus would (needs "
                  "--metrics-address 127.0.0.1:0); 0: no scraping. Set a run "
                  "with it against one without "
                  "--metrics-address to see what metrics cost")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--csv", f->csv_path,
                  "Write the results as CSV (a header and one row)");
  cmd->add_flag("--keep", f->keep,
                "Leave the services running and the data directory in place "
                "(default: stop them and remove the directory)");
  CommandMain main = [&flags, &root, f]() {
    if (!flags.brokers.empty()) {
      std::cerr << "flowsched bench e2e: the benchmark runs its own embedded "
                   "broker; --brokers is not supported\n";
      return 2;
    }
    // `--data-dir` is a common flag with the demo's default; the benchmark
    // wipes its directory, so it uses its own unless told otherwise.
    if (root.get_option("--data-dir")->count() == 0) {
      flags.data_dir = kDefaultDataDir;
    }
    if (absl::Status ready = PrepareDataDir(flags); !ready.ok()) {
      std::cerr << "flowsched bench e2e: " << ready.message() << "\n";
      return 2;
    }
    auto result = e2e::RunE2eBench(flags, f->options, f->keep, std::cerr);
    if (!result.ok()) {
      std::cerr << "flowsched bench e2e: " << result.status().ToString()
                << "\n";
      if (absl::IsInvalidArgument(result.status())) {
        // Bad options: nothing started, nothing worth keeping.
        std::error_code ec;
        std::filesystem::remove_all(flags.data_dir, ec);
        return 2;
      }
      return 1;  // the logs in the data directory tell why
    }
    std::cout << "\n";
    e2e::PrintTable(*result, std::cout);
    if (!f->csv_path.empty()) {
      if (absl::Status written = e2e::WriteCsv(*result, f->csv_path);
          !written.ok()) {
        std::cerr << "flowsched bench e2e: " << written.message() << "\n";
        return 1;
      }
      std::cout << "CSV written to " << f->csv_path << "\n";
    }
    if (!f->keep) {
      std::error_code ec;
      std::filesystem::remove_all(flags.data_dir, ec);
    }
    return 0;
  };
  return {cmd, std::move(main)};
}

}  // namespace flowsched::tools
