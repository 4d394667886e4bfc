// `flowsched demo`: the README's main job. Starts the embedded broker and
// both services on a fresh data directory, submits a sample workload in two
// waves (the second after a third of the first finished), waits until every
// task is placed, prints the summary and stops everything.

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "fmt/format.h"
#include "services/bus/producer.h"
#include "services/graph_manager/status_report.h"
#include "tools/flowsched/commands.h"
#include "tools/flowsched/event_submitter.h"
#include "tools/flowsched/lifecycle.h"
#include "tools/flowsched/summary.h"
#include "tools/workload/workload_generator.h"

namespace flowsched::tools {
namespace {

struct DemoOptions {
  WorkloadSpec spec{.machines = 200,
                    .slots_per_machine = 4,
                    .racks = 20,
                    .jobs = 40,
                    .tasks_per_job = 15};
  int wait_seconds = 120;
  bool keep_running = false;
};

// Waits until the graph manager has applied all `submitted` tasks and
// reports `expected` tasks in the cluster, all placed. Prints progress once
// a second.
bool WaitForPlacement(const CommonFlags& flags, uint64_t submitted,
                      uint64_t expected, int timeout_s) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  auto next_report = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < deadline) {
    auto status =
        graph_manager::ReadStatusFile(flags.data_dir + "/status.json");
    if (status.ok()) {
      if (std::chrono::steady_clock::now() >= next_report) {
        fmt::print("  ... {} of {} tasks placed, {} waiting, {} rounds\n",
                   status->tasks_running(), expected, status->tasks_waiting(),
                   status->rounds_completed());
        next_report += std::chrono::seconds(1);
      }
      if (status->tasks_submitted() == submitted &&
          status->tasks() == expected && status->tasks_running() == expected &&
          !status->round_in_flight()) {
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::vector<v1::ClusterEvent> FinishJobs(uint64_t first_job, uint64_t jobs,
                                         uint64_t tasks_per_job) {
  std::vector<v1::ClusterEvent> events;
  for (uint64_t j = 0; j < jobs; ++j) {
    for (uint64_t t = 0; t < tasks_per_job; ++t) {
      v1::ClusterEvent event;
      event.set_source("flowsched-demo");
      v1::TaskFinished* finished = event.mutable_task_finished();
      finished->set_job_id(first_job + j);
      finished->set_task_id((first_job + j - 1) * tasks_per_job + t + 1);
      events.push_back(std::move(event));
    }
  }
  return events;
}

int RunDemo(CommonFlags& flags, const DemoOptions& options) {
  std::error_code ec;
  std::filesystem::remove_all(flags.data_dir, ec);
  const WorkloadSpec& spec = options.spec;
  fmt::print(
      "flowsched demo: {} machines x {} slots, {} jobs x {} tasks, "
      "data in {}\n",
      spec.machines, spec.slots_per_machine, spec.jobs, spec.tasks_per_job,
      flags.data_dir);
  fmt::print("starting embedded broker, graph manager and solver worker\n");
  if (absl::Status up = StartServices(flags, UpOptions{}); !up.ok()) {
    std::cerr << "flowsched demo: " << up.message() << "\n";
    StopServices(flags).IgnoreError();  // whatever did start
    return 1;
  }
  bool ok = true;
  {
    auto kafka = ResolveKafka(flags);
    auto producer =
        kafka.ok()
            ? bus::Producer::Create(*kafka)
            : absl::StatusOr<std::unique_ptr<bus::Producer>>(kafka.status());
    if (!producer.ok()) {
      std::cerr << "flowsched demo: " << producer.status().message() << "\n";
      StopServices(flags).IgnoreError();  // already failing
      return 1;
    }
    const std::string topic = Topics(flags).events;
    // Wave 1: machines and all jobs.
    std::vector<v1::ClusterEvent> wave1 = GenerateMachines(spec);
    for (auto& e : GenerateJobs(spec)) wave1.push_back(std::move(e));
    fmt::print("wave 1: submitting {} machines and {} tasks\n", spec.machines,
               spec.jobs * spec.tasks_per_job);
    absl::Status sent = SubmitEvents(**producer, topic, wave1);
    const uint64_t wave1_tasks = spec.jobs * spec.tasks_per_job;
    ok = sent.ok() && WaitForPlacement(flags, wave1_tasks, wave1_tasks,
                                       options.wait_seconds);
    if (ok) {
      // Wave 2: a third of the jobs finish, as many new tasks arrive.
      const uint64_t finished_jobs = std::max<uint64_t>(1, spec.jobs / 3);
      WorkloadSpec next = spec;
      next.jobs = finished_jobs;
      next.first_job_id = spec.first_job_id + spec.jobs;
      next.first_task_id = spec.first_task_id + wave1_tasks;
      next.seed = spec.seed + 1;
      std::vector<v1::ClusterEvent> wave2 =
          FinishJobs(spec.first_job_id, finished_jobs, spec.tasks_per_job);
      for (auto& e : GenerateJobs(next)) wave2.push_back(std::move(e));
      fmt::print("wave 2: {} tasks finish, {} new tasks arrive\n",
                 finished_jobs * spec.tasks_per_job,
                 finished_jobs * spec.tasks_per_job);
      sent = SubmitEvents(**producer, topic, wave2);
      ok = sent.ok() &&
           WaitForPlacement(flags,
                            wave1_tasks + finished_jobs * spec.tasks_per_job,
                            wave1_tasks, options.wait_seconds);
    }
    if (!sent.ok()) std::cerr << "flowsched demo: " << sent.message() << "\n";
  }
  // Let the last status write land, then report.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto status = graph_manager::ReadStatusFile(flags.data_dir + "/status.json");
  fmt::print("\n");
  if (status.ok()) PrintSummary(*status, std::cout);
  if (!options.keep_running) {
    StopServices(flags).IgnoreError();  // reported by `flowsched status`
    fmt::print("\nservices stopped; state kept in {}\n", flags.data_dir);
  } else {
    fmt::print(
        "\nservices keep running; stop them with `flowsched down "
        "--data-dir {}`\n",
        flags.data_dir);
  }
  if (!ok) {
    std::cerr << "flowsched demo: not every task was placed within "
              << options.wait_seconds << " s; see " << flags.data_dir
              << "/logs\n";
    return 1;
  }
  fmt::print("every task of the sample workload is placed\n");
  return 0;
}

}  // namespace

CommandMain AddDemoCommand(CLI::App& app, CommonFlags& flags) {
  auto* cmd = app.add_subcommand(
      "demo",
      "Run the whole pipeline on the embedded broker with a sample workload "
      "and print a summary (the README's main job)");
  auto options = std::make_shared<DemoOptions>();
  cmd->add_option("--machines", options->spec.machines, "Machines")
      ->check(CLI::Range(1, 100'000))
      ->capture_default_str();
  cmd->add_option("--slots", options->spec.slots_per_machine, "Slots each")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--jobs", options->spec.jobs, "Jobs")
      ->check(CLI::Range(1, 100'000))
      ->capture_default_str();
  cmd->add_option("--tasks-per-job", options->spec.tasks_per_job,
                  "Tasks per job")
      ->check(CLI::Range(1, 100'000))
      ->capture_default_str();
  cmd->add_option("--wait-seconds", options->wait_seconds,
                  "Give up waiting for placement after this long")
      ->capture_default_str();
  cmd->add_flag("--keep-running", options->keep_running,
                "Leave the services running afterwards");
  return [&flags, options]() {
    if (!flags.brokers.empty()) {
      std::cerr << "flowsched demo: the demo runs its own embedded broker; "
                   "use `flowsched up --brokers ...` for a real cluster\n";
      return 2;
    }
    return RunDemo(flags, *options);
  };
}

}  // namespace flowsched::tools
