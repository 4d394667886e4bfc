#include "tools/e2e/e2e_bench.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flowsched/v1/events.pb.h"
#include "fmt/format.h"
#include "fmt/ostream.h"
#include "services/bus/producer.h"
#include "services/common/status_macros.h"
#include "services/graph_manager/status_report.h"
#include "tools/e2e/metrics_scraper.h"
#include "tools/e2e/placement_watcher.h"
#include "tools/flowsched/event_submitter.h"
#include "tools/flowsched/lifecycle.h"
#include "tools/flowsched/process_control.h"
#include "tools/workload/workload_generator.h"

namespace flowsched::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using v1::GraphManagerStatus;

double MillisBetween(SteadyTime from, SteadyTime to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// User plus system CPU seconds the process used so far (/proc/<pid>/stat),
// or -1. On a shared machine wall-clock rates depend on the neighbours; CPU
// time per event does not.
double CpuSeconds(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  std::getline(in, stat);
  // Fields after the command name, which is in parentheses and may hold
  // spaces: state is field 3, utime 14, stime 15.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::strtod(field.c_str(), nullptr);
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

uint64_t Applied(const GraphManagerStatus& s) {
  return s.events_applied() + s.events_rejected();
}

class Bench {
 public:
  Bench(const tools::CommonFlags& flags, const E2eOptions& options,
        std::ostream& progress)
      : flags_(flags),
        options_(options),
        progress_(progress),
        rng_(options.seed) {
    up_.policy = options.policy;
    up_.algorithm = options.algorithm;
    up_.start_timeout_ms = options.phase_timeout_s * 1000;
  }

  absl::Status Run(E2eResult& result) {
    FLOWSCHED_RETURN_IF_ERROR(Setup(result));
    FLOWSCHED_RETURN_IF_ERROR(Ingest(result));
    FLOWSCHED_RETURN_IF_ERROR(Steady(result));
    if (options_.restart_signal != "none") {
      FLOWSCHED_RETURN_IF_ERROR(Restart(result));
    }
    return watcher_->error();
  }

 private:
  std::string StatusPath() const { return flags_.data_dir + "/status.json"; }
  std::string ManagerPidPath() const {
    return flags_.data_dir + "/pids/graph-manager.pid";
  }
  std::string WorkerPidPath() const {
    return flags_.data_dir + "/pids/solver-worker.pid";
  }

  absl::StatusOr<GraphManagerStatus> ReadStatus() const {
    return graph_manager::ReadStatusFile(StatusPath());
  }

  // Polls every 5 ms until `done`; prints `describe` once a second.
  absl::Status WaitUntil(const std::string& phase,
                         const std::function<bool()>& done,
                         const std::function<std::string()>& describe) {
    const SteadyTime start = Clock::now();
    const SteadyTime deadline =
        start + std::chrono::seconds(options_.phase_timeout_s);
    SteadyTime next_report = start + std::chrono::seconds(1);
    while (!done()) {
      const SteadyTime now = Clock::now();
      if (now >= deadline) {
        return absl::FailedPreconditionError(absl::StrCat(
            phase, " did not finish in ", options_.phase_timeout_s, " s (",
            describe(), "); see ", flags_.data_dir, "/logs"));
      }
      if (now >= next_report) {
        fmt::print(progress_, "  {} {:.0f} s: {}\n", phase,
                   MillisBetween(start, now) / 1000, describe());
        next_report += std::chrono::seconds(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return absl::OkStatus();
  }

  // Waits until the status file satisfies `done` and returns that status.
  absl::StatusOr<GraphManagerStatus> WaitForStatus(
      const std::string& phase,
      const std::function<bool(const GraphManagerStatus&)>& done) {
    GraphManagerStatus last;
    FLOWSCHED_RETURN_IF_ERROR(WaitUntil(
        phase,
        [&] {
          auto status = ReadStatus();
          if (!status.ok()) return false;
          last = *status;
          return done(last);
        },
        [&] { return Describe(last); }));
    return last;
  }

  std::string Describe(const GraphManagerStatus& s) const {
    return fmt::format(
        "{} events applied, {} tasks ({} running, {} waiting), {} rounds, "
        "{} placements seen",
        Applied(s), s.tasks(), s.tasks_running(), s.tasks_waiting(),
        s.rounds_completed(), watcher_ ? watcher_->placements_seen() : 0);
  }

  absl::Status Produce(const v1::ClusterEvent& event) {
    return producer_->Produce(events_topic_, bus::kAnyPartition,
                              tools::EventKey(event),
                              event.SerializeAsString());
  }

  v1::TaskSpec NewTask(uint64_t task_id) {
    std::uniform_int_distribution<int64_t> cpu(250, 1000);
    v1::TaskSpec spec;
    spec.set_task_id(task_id);
    const int64_t cpu_millis = cpu(rng_);  // drawn either way: same workload
    if (options_.requests == "cpu-mem") {
      spec.mutable_request()->set_cpu_millis(cpu_millis);
      spec.mutable_request()->set_memory_bytes(int64_t{1} << 30);
    }
    return spec;
  }

  v1::ClusterEvent TaskSubmitted(uint64_t job_id, uint64_t task_id) {
    v1::ClusterEvent event;
    event.set_source("flowsched-bench-e2e");
    v1::TaskSubmitted* submitted = event.mutable_task_submitted();
    submitted->set_job_id(job_id);
    *submitted->mutable_task() = NewTask(task_id);
    RecordTask(job_id, task_id);
    return event;
  }

  void RecordTask(uint64_t job_id, uint64_t task_id) {
    if (task_job_.size() <= task_id) task_job_.resize(task_id + 1, 0);
    task_job_[task_id] = job_id;
    ++live_per_job_[job_id];
  }

  // Phase 1: machines and jobs (each with its first task), all applied.
  absl::Status Setup(E2eResult& result) {
    fmt::print(progress_,
               "starting embedded broker, graph manager and "
               "solver worker in {}\n",
               flags_.data_dir);
    FLOWSCHED_RETURN_IF_ERROR(tools::StartServices(flags_, up_));
    FLOWSCHED_ASSIGN_OR_RETURN(bus::KafkaOptions kafka,
                               tools::ResolveKafka(flags_));
    FLOWSCHED_ASSIGN_OR_RETURN(producer_, bus::Producer::Create(kafka));
    const bus::TopicNames topics = tools::Topics(flags_);
    events_topic_ = topics.events;
    FLOWSCHED_ASSIGN_OR_RETURN(
        int partitions, producer_->PartitionCount(topics.placements, 10'000));
    FLOWSCHED_ASSIGN_OR_RETURN(
        watcher_,
        PlacementWatcher::Start(kafka, topics.placements, partitions));
    tools::WorkloadSpec spec;
    spec.machines = result.machines;
    spec.slots_per_machine = result.slots;
    spec.racks =
        options_.racks > 0 ? options_.racks : (result.machines + 39) / 40;
    std::vector<v1::ClusterEvent> events = tools::GenerateMachines(spec);
    live_per_job_.assign(result.jobs + 1, 0);
    for (uint64_t job = 1; job <= result.jobs; ++job) {
      v1::ClusterEvent event;
      event.set_source("flowsched-bench-e2e");
      v1::JobSubmitted* submitted = event.mutable_job_submitted();
      submitted->set_job_id(job);
      submitted->set_name(absl::StrCat("bench-", job));
      *submitted->add_tasks() = NewTask(job);  // task id = job id
      RecordTask(job, job);
      watcher_->Expect(job, Clock::now(), /*sample=*/false);
      events.push_back(std::move(event));
    }
    fmt::print(progress_, "setup: {} machines and {} jobs\n", result.machines,
               result.jobs);
    FLOWSCHED_RETURN_IF_ERROR(
        tools::SubmitEvents(*producer_, events_topic_, events));
    const uint64_t expected = events.size();
    FLOWSCHED_RETURN_IF_ERROR(
        WaitForStatus("setup", [&](const GraphManagerStatus& s) {
          return Applied(s) >= expected;
        }).status());
    // Stop the graph manager at a quiet point (no round in flight), so the
    // ingest measurement does not include recovering an answered round.
    FLOWSCHED_RETURN_IF_ERROR(WaitAllPlaced("setup placing"));
    return WaitForStatus("setup settling",
                         [&](const GraphManagerStatus& s) {
                           return !s.round_in_flight();
                         })
        .status();
  }

  // Phase 2: the rest of the tasks produced while the graph manager is
  // stopped, then its ingest rate once it starts.
  absl::Status Ingest(E2eResult& result) {
    FLOWSCHED_ASSIGN_OR_RETURN(pid_t manager,
                               tools::ReadPidFile(ManagerPidPath()));
    FLOWSCHED_RETURN_IF_ERROR(tools::StopProcess(manager, 60'000));
    result.burst_events = result.tasks - result.jobs;
    fmt::print(progress_,
               "ingest: producing {} task submissions while the "
               "graph manager is stopped\n",
               result.burst_events);
    const SteadyTime produce_start = Clock::now();
    for (uint64_t i = 0; i < result.burst_events; ++i) {
      const uint64_t task_id = result.jobs + 1 + i;
      watcher_->Expect(task_id, Clock::now(), /*sample=*/false);
      FLOWSCHED_RETURN_IF_ERROR(
          Produce(TaskSubmitted(i % result.jobs + 1, task_id)));
    }
    FLOWSCHED_RETURN_IF_ERROR(producer_->Flush(120'000));
    result.produce_events_per_s =
        static_cast<double>(result.burst_events) /
        std::max(1e-9, MillisBetween(produce_start, Clock::now()) / 1000);
    next_task_id_ = result.tasks + 1;

    FLOWSCHED_RETURN_IF_ERROR(tools::StartServices(flags_, up_));
    const SteadyTime ready = Clock::now();
    FLOWSCHED_ASSIGN_OR_RETURN(pid_t ingesting,
                               tools::ReadPidFile(ManagerPidPath()));
    const double cpu_at_start = CpuSeconds(ingesting);
    FLOWSCHED_ASSIGN_OR_RETURN(GraphManagerStatus first, ReadStatus());
    const uint64_t base = Applied(first);
    const uint64_t target = base + result.burst_events;
    // Status reports come every 200 ms with the manager's own clock; the
    // rate is taken up to the last report while it was still ingesting,
    // which is not rounded up to the next report like the end time is.
    int64_t last_time_us = first.updated_time_us();
    uint64_t partial = 0;
    int64_t partial_time_us = 0;
    int64_t done_time_us = 0;
    FLOWSCHED_RETURN_IF_ERROR(WaitUntil(
        "ingest",
        [&] {
          auto status = ReadStatus();
          if (!status.ok() || status->updated_time_us() == last_time_us) {
            return false;
          }
          last_time_us = status->updated_time_us();
          const uint64_t applied = Applied(*status);
          if (applied >= target) {
            done_time_us = last_time_us;
            result.ingest_cpu_seconds = CpuSeconds(ingesting) - cpu_at_start;
            return true;
          }
          if (applied > base) {
            partial = applied - base;
            partial_time_us = last_time_us;
          }
          return false;
        },
        [&] {
          return fmt::format("{} of {} applied", partial, result.burst_events);
        }));
    result.ingest_seconds =
        static_cast<double>(done_time_us - first.updated_time_us()) / 1e6;
    if (partial * 2 >= result.burst_events &&
        partial_time_us > first.updated_time_us()) {
      result.ingest_events_per_s =
          static_cast<double>(partial) /
          (static_cast<double>(partial_time_us - first.updated_time_us()) /
           1e6);
    } else {
      result.ingest_events_per_s = static_cast<double>(result.burst_events) /
                                   std::max(1e-9, result.ingest_seconds);
    }
    fmt::print(progress_,
               "ingest: {} events in {:.2f} s ({:.0f} events/s); "
               "waiting for every task to be placed\n",
               result.burst_events, result.ingest_seconds,
               result.ingest_events_per_s);
    FLOWSCHED_RETURN_IF_ERROR(WaitAllPlaced("placing"));
    result.burst_placed_seconds = MillisBetween(ready, Clock::now()) / 1000;
    // A round after the last placement takes in the burst's starts (every
    // placed task's arcs change): it belongs to the burst, not to the steady
    // state that follows, so the steady window opens once it is done, or
    // once a second has passed without one (nothing was left to solve).
    FLOWSCHED_ASSIGN_OR_RETURN(const GraphManagerStatus placed, ReadStatus());
    const SteadyTime placed_at = Clock::now();
    FLOWSCHED_RETURN_IF_ERROR(
        WaitForStatus("settling", [&](const GraphManagerStatus& s) {
          if (s.round_in_flight()) return false;
          return s.rounds_completed() > placed.rounds_completed() ||
                 Clock::now() - placed_at >= std::chrono::seconds(1);
        }).status());
    result.burst_settled_seconds = MillisBetween(ready, Clock::now()) / 1000;
    return absl::OkStatus();
  }

  absl::Status WaitAllPlaced(const std::string& phase) {
    GraphManagerStatus last;
    return WaitUntil(
        phase,
        [&] {
          auto status = ReadStatus();
          if (!status.ok()) return false;
          last = *status;
          return watcher_->pending() == 0 && status->tasks_waiting() == 0 &&
                 status->tasks() == status->tasks_running();
        },
        [&] {
          return fmt::format("{} tasks without a placement; {}",
                             watcher_->pending(), Describe(last));
        });
  }

  // Phase 3: arrivals and completions at the churn rate.
  absl::Status Steady(E2eResult& result) {
    fmt::print(progress_, "steady state: {:.0f} events/s for {:.0f} s\n",
               options_.churn_per_s, options_.duration_s);
    std::uniform_int_distribution<uint64_t> pick_job(1, result.jobs);
    FLOWSCHED_ASSIGN_OR_RETURN(const pid_t manager,
                               tools::ReadPidFile(ManagerPidPath()));
    FLOWSCHED_ASSIGN_OR_RETURN(const pid_t worker,
                               tools::ReadPidFile(WorkerPidPath()));
    const double manager_cpu_at_start = CpuSeconds(manager);
    const double worker_cpu_at_start = CpuSeconds(worker);
    const SteadyTime start = Clock::now();
    SteadyTime next_report = start + std::chrono::seconds(1);
    uint64_t produced = 0;
    for (;;) {
      const SteadyTime now = Clock::now();
      const double elapsed_s = MillisBetween(start, now) / 1000;
      if (elapsed_s >= options_.duration_s) break;
      const auto target =
          static_cast<uint64_t>(options_.churn_per_s * elapsed_s);
      while (produced < target) {
        ++produced;
        if (result.completions < result.arrivals) {
          const uint64_t task_id = watcher_->TakeRunning(rng_);
          if (task_id != 0 && live_per_job_[task_job_[task_id]] > 1) {
            // A job ends with its last task; keeping one alive keeps every
            // job id valid for later arrivals.
            const uint64_t job_id = task_job_[task_id];
            v1::ClusterEvent event;
            event.set_source("flowsched-bench-e2e");
            event.mutable_task_finished()->set_job_id(job_id);
            event.mutable_task_finished()->set_task_id(task_id);
            --live_per_job_[job_id];
            ++result.completions;
            FLOWSCHED_RETURN_IF_ERROR(Produce(event));
            continue;
          }
          if (task_id != 0) watcher_->ReturnRunning(task_id);
        }
        const uint64_t task_id = next_task_id_++;
        v1::ClusterEvent event = TaskSubmitted(pick_job(rng_), task_id);
        watcher_->Expect(task_id, Clock::now(), /*sample=*/true);
        ++result.arrivals;
        FLOWSCHED_RETURN_IF_ERROR(Produce(event));
      }
      if (now >= next_report) {
        const LatencySummary so_far = Summarize(watcher_->samples_ms());
        fmt::print(progress_,
                   "  steady {:.0f}/{:.0f} s: {} arrivals, {} completions, {} "
                   "placed, p50 {:.1f} ms, p99 {:.1f} ms\n",
                   elapsed_s, options_.duration_s, result.arrivals,
                   result.completions, so_far.count, so_far.p50_ms,
                   so_far.p99_ms);
        next_report += std::chrono::seconds(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    const SteadyTime end = Clock::now();
    const double manager_cpu_at_end = CpuSeconds(manager);
    const double worker_cpu_at_end = CpuSeconds(worker);
    if (std::min({manager_cpu_at_start, worker_cpu_at_start, manager_cpu_at_end,
                  worker_cpu_at_end}) < 0) {
      return absl::FailedPreconditionError(
          "cannot read the services' CPU time from /proc: did one exit "
          "during the steady state?");
    }
    result.steady_manager_cpu_s = manager_cpu_at_end - manager_cpu_at_start;
    result.steady_worker_cpu_s = worker_cpu_at_end - worker_cpu_at_start;
    FLOWSCHED_RETURN_IF_ERROR(producer_->Flush(60'000));
    for (const CompletedRound& round : watcher_->rounds()) {
      if (round.seen >= start && round.seen <= end) ++result.rounds;
    }
    result.rounds_per_s = static_cast<double>(result.rounds) /
                          std::max(1e-9, MillisBetween(start, end) / 1000);
    absl::Status placed = WaitAllPlaced("draining");
    result.unplaced = watcher_->pending();
    result.latency = Summarize(watcher_->samples_ms());
    FLOWSCHED_RETURN_IF_ERROR(placed);
    // Timings are per graph manager epoch: read them before the restart.
    FLOWSCHED_ASSIGN_OR_RETURN(GraphManagerStatus status, ReadStatus());
    result.solve_p50_ms = status.solve().p50_ms();
    result.round_trip_p50_ms = status.round_trip().p50_ms();
    result.events_rejected = status.events_rejected();
    return absl::OkStatus();
  }

  // Phase 4: stop the graph manager holding the full state, start it again.
  absl::Status Restart(E2eResult& result) {
    result.restart_signal = options_.restart_signal;
    // A fresh report (every 200 ms) that has seen every event.
    const uint64_t submitted = next_task_id_ - 1;
    FLOWSCHED_ASSIGN_OR_RETURN(
        GraphManagerStatus before,
        WaitForStatus("settling", [&](const GraphManagerStatus& s) {
          return s.tasks_submitted() == submitted && !s.round_in_flight();
        }));
    FLOWSCHED_ASSIGN_OR_RETURN(pid_t manager,
                               tools::ReadPidFile(ManagerPidPath()));
    fmt::print(progress_,
               "restart: SIG{} to the graph manager holding {} "
               "tasks\n",
               options_.restart_signal == "kill" ? "KILL" : "TERM",
               before.tasks());
    const SteadyTime signalled = Clock::now();
    ::kill(manager, options_.restart_signal == "kill" ? SIGKILL : SIGTERM);
    FLOWSCHED_RETURN_IF_ERROR(WaitUntil(
        "stopping", [&] { return !tools::ProcessAlive(manager); },
        [] { return std::string("graph manager still running"); }));
    const SteadyTime spawned = Clock::now();
    result.restart_stop_ms = MillisBetween(signalled, spawned);
    FLOWSCHED_RETURN_IF_ERROR(tools::StartServices(flags_, up_));
    result.restart_ready_ms = MillisBetween(spawned, Clock::now());
    FLOWSCHED_ASSIGN_OR_RETURN(pid_t restarted,
                               tools::ReadPidFile(ManagerPidPath()));
    result.restart_ready_cpu_ms = 1000 * CpuSeconds(restarted);
    FLOWSCHED_ASSIGN_OR_RETURN(GraphManagerStatus after, ReadStatus());
    result.restart_tasks = after.tasks();
    if (after.epoch() <= before.epoch() || after.tasks() != before.tasks()) {
      return absl::DataLossError(absl::StrCat(
          "the restarted graph manager (epoch ", after.epoch(), ") reports ",
          after.tasks(), " tasks; before the restart (epoch ", before.epoch(),
          ") it held ", before.tasks()));
    }
    SteadyTime first_round{};
    FLOWSCHED_RETURN_IF_ERROR(WaitUntil(
        "first round",
        [&] {
          for (const CompletedRound& round : watcher_->rounds()) {
            if (round.graph_epoch == GraphEpoch(after.epoch())) {
              first_round = round.seen;
              return true;
            }
          }
          return false;
        },
        [] { return std::string("no round of the new epoch yet"); }));
    result.restart_next_round_ms = MillisBetween(spawned, first_round);
    return absl::OkStatus();
  }

  const tools::CommonFlags& flags_;
  const E2eOptions& options_;
  std::ostream& progress_;
  tools::UpOptions up_;
  std::mt19937_64 rng_;
  std::unique_ptr<bus::Producer> producer_;
  std::unique_ptr<PlacementWatcher> watcher_;
  std::string events_topic_;
  std::vector<uint64_t> task_job_;  // task id -> job id
  std::vector<uint64_t>
      live_per_job_;  // job id -> tasks submitted, not finished
  uint64_t next_task_id_ = 1;
};

}  // namespace

absl::StatusOr<E2eResult> RunE2eBench(const tools::CommonFlags& flags,
                                      const E2eOptions& options,
                                      bool keep_running,
                                      std::ostream& progress) {
  if (options.restart_signal != "term" && options.restart_signal != "kill" &&
      options.restart_signal != "none") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--restart must be term, kill or none, not ", options.restart_signal));
  }
  if (options.scrape_every_s != 0 && options.scrape_every_s < 0.05) {
    return absl::InvalidArgumentError(
        "--scrape-every is 0 (no scraping) or at least 0.05 s");
  }
  if (options.scrape_every_s > 0 && flags.metrics_address.empty()) {
    return absl::InvalidArgumentError(
        "--scrape-every needs the services' metrics endpoints: add "
        "--metrics-address 127.0.0.1:0");
  }
  E2eResult result;
  result.machines = options.machines;
  result.slots = options.slots;
  const uint64_t slots = options.machines * options.slots;
  result.tasks = options.tasks > 0
                     ? options.tasks
                     : static_cast<uint64_t>(std::llround(
                           options.utilisation * static_cast<double>(slots)));
  if (result.tasks == 0 || result.tasks > slots) {
    return absl::InvalidArgumentError(
        absl::StrCat("the workload needs between 1 and ", slots,
                     " tasks (machines x "
                     "slots) so that every task can be placed; got ",
                     result.tasks));
  }
  result.jobs = options.jobs > 0 ? std::min(options.jobs, result.tasks)
                                 : (result.tasks + 82) / 83;
  result.utilisation =
      static_cast<double>(result.tasks) / static_cast<double>(slots);
  result.churn_per_s = options.churn_per_s;
  result.duration_s = options.duration_s;
  result.policy = options.policy;
  result.algorithm = options.algorithm;
  result.restart_signal = options.restart_signal;
  absl::Status status;
  {
    std::optional<MetricsScraper> scraper;
    if (options.scrape_every_s > 0) {
      scraper.emplace(flags.data_dir, options.scrape_every_s);
    }
    // The bench (and its consumer thread) ends before the services stop.
    Bench bench(flags, options, progress);
    status = bench.Run(result);
    if (scraper.has_value()) {
      const ScrapeTotals totals = scraper->Stop();
      result.scrape_every_s = options.scrape_every_s;
      result.scrapes = totals.scrapes;
      result.scrape_failures = totals.failures;
      if (totals.scrapes > 0) {
        const auto n = static_cast<double>(totals.scrapes);
        result.scrape_mean_ms = totals.total_ms / n;
        result.scrape_mean_kib = static_cast<double>(totals.bytes) / 1024 / n;
      }
    }
  }
  if (!keep_running) {
    absl::Status stopped = tools::StopServices(flags);
    if (status.ok()) status = stopped;
  }
  if (!status.ok()) return status;
  return result;
}

}  // namespace flowsched::e2e
