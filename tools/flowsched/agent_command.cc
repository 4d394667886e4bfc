// `flowsched agent --machine M [--command CMD]`: a reference node agent on
// PlacementSubscriber (clients/cpp). For every decision that starts a task
// on machine M (place, or migrate to M) it prints one JSON line; with
// --command it runs `sh -c CMD` per such task (FLOWSCHED_JOB_ID,
// FLOWSCHED_TASK_ID, FLOWSCHED_MACHINE_ID in the environment), one after
// the other, and publishes TaskFinished when CMD exits 0, TaskFailed
// otherwise. A round's offsets are committed only after its commands ran
// and their events were acknowledged. Rounds are confirmed by the ledger
// (decisions the graph manager rejected as stale are never acted on) unless
// --placements-only. Stops on SIGTERM/SIGINT, after --timeout-s, or after
// --max-placements.

#include "tools/flowsched/agent_command.h"

#include <cstdlib>
#include <iostream>
#include <limits>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "clients/cpp/event_publisher.h"
#include "clients/cpp/placement_subscriber.h"
#include "fmt/format.h"
#include "services/common/logging.h"
#include "tools/flowsched/stop_signal.h"

namespace flowsched::tools {
namespace {

struct AgentOptions {
  uint64_t machine = 0;
  std::string command;
  std::string group;             // default agent-<machine>
  int timeout_s = 0;             // 0: until stopped
  uint64_t max_placements = 0;   // 0: no limit
  bool placements_only = false;  // act before the ledger confirms
};

const char* ActionName(v1::Action action) {
  switch (action) {
    case v1::ACTION_PLACE:
      return "place";
    case v1::ACTION_MIGRATE:
      return "migrate";
    case v1::ACTION_PREEMPT:
      return "preempt";
    default:
      return "unspecified";
  }
}

// Runs CMD for one task; the event to publish when it exited.
v1::ClusterEvent RunTask(const std::string& command,
                         const v1::PlacementDecision& d) {
  setenv("FLOWSCHED_JOB_ID", std::to_string(d.job_id()).c_str(), 1);
  setenv("FLOWSCHED_TASK_ID", std::to_string(d.task_id()).c_str(), 1);
  setenv("FLOWSCHED_MACHINE_ID", std::to_string(d.machine_id()).c_str(), 1);
  std::cout.flush();
  const int rc = std::system(command.c_str());
  v1::ClusterEvent event;
  event.set_source("flowsched-agent");
  event.set_event_id(absl::StrCat("agent-", d.idempotency_key()));
  if (rc == 0) {
    event.mutable_task_finished()->set_job_id(d.job_id());
    event.mutable_task_finished()->set_task_id(d.task_id());
  } else {
    auto* failed = event.mutable_task_failed();
    failed->set_job_id(d.job_id());
    failed->set_task_id(d.task_id());
    failed->set_reason(absl::StrCat("command exited with status ", rc));
  }
  return event;
}

int RunAgent(const CommonFlags& flags, const AgentOptions& options) {
  InitLogging("agent", flags.log_level == "info" ? "warn" : flags.log_level,
              flags.log_format);
  auto kafka = ResolveKafka(flags);
  if (!kafka.ok()) {
    std::cerr << "flowsched agent: " << kafka.status().message() << "\n";
    return 2;
  }
  std::unique_ptr<client::EventPublisher> publisher;
  if (!options.command.empty()) {
    auto created = client::EventPublisher::Create(*kafka, flags.topic_prefix);
    if (!created.ok()) {
      std::cerr << "flowsched agent: " << created.status().message() << "\n";
      return 1;
    }
    publisher = std::move(*created);
  }
  uint64_t placements = 0;
  auto on_round = [&](const client::Round& round) -> absl::Status {
    bool published = false;
    for (const v1::PlacementDecision& d : round.decisions) {
      const bool starts =
          d.machine_id() == options.machine &&
          (d.action() == v1::ACTION_PLACE || d.action() == v1::ACTION_MIGRATE);
      const bool stops = d.previous_machine_id() == options.machine &&
                         (d.action() == v1::ACTION_PREEMPT ||
                          d.action() == v1::ACTION_MIGRATE);
      if (!starts && !stops) continue;
      fmt::print(
          "{{\"round\":{},\"job_id\":{},\"task_id\":{},\"machine_id\":{},"
          "\"previous_machine_id\":{},\"action\":\"{}\","
          "\"idempotency_key\":\"{}\"}}\n",
          round.round_id, d.job_id(), d.task_id(), d.machine_id(),
          d.previous_machine_id(), ActionName(d.action()), d.idempotency_key());
      std::fflush(stdout);
      if (!starts) continue;
      ++placements;
      if (publisher != nullptr) {
        absl::Status sent = publisher->Publish(RunTask(options.command, d));
        if (!sent.ok()) return sent;
        published = true;
      }
    }
    return published ? publisher->Flush(30'000) : absl::OkStatus();
  };
  client::SubscriberOptions sub_options;
  sub_options.kafka = *kafka;
  sub_options.group = options.group.empty()
                          ? absl::StrCat("agent-", options.machine)
                          : options.group;
  sub_options.topic_prefix = flags.topic_prefix;
  sub_options.confirm_with_ledger = !options.placements_only;
  auto sub = client::PlacementSubscriber::Create(sub_options, on_round);
  if (!sub.ok()) {
    std::cerr << "flowsched agent: " << sub.status().message() << "\n";
    return 1;
  }
  const std::atomic<bool>& stop = InstallStopHandlers();
  constexpr int kForeverMs = std::numeric_limits<int>::max();  // ~24 days
  absl::StatusOr<int> run = (*sub)->Run(
      [&] {
        return stop.load() || (options.max_placements != 0 &&
                               placements >= options.max_placements);
      },
      options.timeout_s > 0 ? options.timeout_s * 1000 : kForeverMs);
  absl::Status closed = (*sub)->Close();
  if (!run.ok() || !closed.ok()) {
    std::cerr << "flowsched agent: "
              << (run.ok() ? closed : run.status()).message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

CommandMain AddAgentCommand(CLI::App& app, CommonFlags& flags) {
  auto* cmd = app.add_subcommand(
      "agent",
      "A reference node agent: acts on one machine's placement decisions");
  auto options = std::make_shared<AgentOptions>();
  cmd->add_option("--machine", options->machine, "The machine id")->required();
  cmd->add_option("--command", options->command,
                  "Run `sh -c CMD` per placed task (FLOWSCHED_TASK_ID, "
                  "FLOWSCHED_JOB_ID in the environment); publish "
                  "TaskFinished when it exits 0, TaskFailed otherwise");
  cmd->add_option("--group", options->group,
                  "Consumer group for the offsets (default agent-<machine>)");
  cmd->add_option("--timeout-s", options->timeout_s,
                  "Stop after this many seconds (0: until SIGTERM)");
  cmd->add_flag("--placements-only", options->placements_only,
                "Act on a round as soon as the solver's answer is complete, "
                "without waiting for the ledger (may act on decisions the "
                "graph manager then rejects as stale)");
  cmd->add_option("--max-placements", options->max_placements,
                  "Stop after acting on N placements (0: no limit)");
  return [&flags, options]() { return RunAgent(flags, *options); };
}

}  // namespace flowsched::tools
