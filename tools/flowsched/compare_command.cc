// `flowsched compare FILE`: replays one event log (JSON lines) in-process
// through several schedulers, the flow scheduler under any policy and the
// baselines (Quincy's G and GF, a kube-like filter-and-score), and prints
// for each: tasks placed and waiting, rounds, solve time, and where the
// placed tasks' input lives (on the machine, in its rack, across racks).
// The same events, the same round boundaries, so the numbers compare.

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "services/cluster/cluster_state.h"
#include "services/cluster/event_decoder.h"
#include "services/solver/solver_registry.h"
#include "tools/flowsched/commands.h"
#include "tools/flowsched/event_submitter.h"
#include "tools/sim/contender.h"
#include "tools/sim/metrics.h"

namespace flowsched::tools {
namespace {

struct Outcome {
  std::string name;
  uint64_t rounds = 0, placed = 0, waiting = 0, rejected = 0;
  double solve_ms = 0;
  int64_t local = 0, rack = 0, remote = 0;  // input bytes of running tasks
  std::string error;
};

void CountLocality(const cluster::ClusterState& state, Outcome& outcome) {
  for (const auto& [id, task] : state.tasks()) {
    if (!task.running()) {
      ++outcome.waiting;
      continue;
    }
    ++outcome.placed;
    const sim::LocalityBytes bytes =
        sim::InputLocality(state, task, task.machine);
    outcome.local += bytes.local;
    outcome.rack += bytes.rack;
    outcome.remote += bytes.remote;
  }
}

// Events without a time are spaced `step_us` apart: time-dependent costs
// (Quincy's waiting time) need time to pass between rounds.
Outcome Replay(const std::string& name,
               std::unique_ptr<sim::Contender> contender,
               const std::vector<v1::ClusterEvent>& events, size_t round_every,
               int64_t step_us) {
  Outcome outcome{.name = name};
  const cluster::EventDecoder decoder{cluster::ValidationLimits{}};
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  int64_t now_us = 0;
  auto round = [&]() -> bool {
    ++outcome.rounds;
    auto decided = contender->Decide(state, changes, now_us);
    changes.Clear();
    if (!decided.ok()) {
      outcome.error = decided.status().ToString();
      return false;
    }
    outcome.solve_ms += decided->total_ms();
    // The applied decisions reach the policy with the next round's changes.
    sim::ApplyDecisions(*decided, state, now_us, changes);
    return true;
  };
  for (size_t i = 0; i < events.size(); ++i) {
    auto event = decoder.FromProto(events[i]);
    now_us = event.ok() && event->event_time_us > 0
                 ? event->event_time_us
                 : static_cast<int64_t>(i) * step_us;
    cluster::ChangeSet touched;
    if (!event.ok() || !state.Apply(*event, now_us, touched).ok()) {
      ++outcome.rejected;
      continue;
    }
    changes.Merge(touched);
    if ((i + 1) % round_every == 0 && !round()) return outcome;
  }
  // Settle: a few more rounds with no new events.
  for (int settle = 0; settle < 5; ++settle) {
    now_us += step_us * static_cast<int64_t>(round_every);
    if (!round()) return outcome;
  }
  CountLocality(state, outcome);
  return outcome;
}

}  // namespace

CommandMain AddCompareCommand(CLI::App& app, CommonFlags& /*flags*/) {
  auto* cmd = app.add_subcommand(
      "compare",
      "Replay one event log (JSON lines) in-process through the flow "
      "scheduler under chosen policies and through the baselines, and "
      "compare placement and data locality");
  struct Options {
    std::string file;
    std::string schedulers =
        "flow:load-spreading,flow:quincy-qfp,greedy,greedy-fair,filter-score";
    size_t round_every = 100;
    double seconds_per_event = 1.0;
  };
  auto options = std::make_shared<Options>();
  cmd->add_option("file", options->file, "Event log (JSON lines)")->required();
  cmd->add_option("--schedulers", options->schedulers,
                  "Comma-separated: flow:<policy>[:key=value,...], greedy, "
                  "greedy-fair, filter-score, or another baseline")
      ->capture_default_str();
  cmd->add_option("--round-every", options->round_every,
                  "Events between scheduling rounds")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  cmd->add_option("--seconds-per-event", options->seconds_per_event,
                  "Clock step for events that carry no time")
      ->check(CLI::Range(0.0, 86'400.0))
      ->capture_default_str();
  return [options]() {
    const std::vector<std::string> names =
        sim::SplitContenderList(options->schedulers);
    if (names.empty()) {
      std::cerr << "flowsched compare: --schedulers names none\n";
      return 2;
    }
    for (const std::string& name : names) {
      // Every name is checked before the replay, not when its turn comes.
      auto made = sim::MakeContender(name, std::string(solver::kDefaultSolver));
      if (!made.ok()) {
        std::cerr << "flowsched compare: " << made.status().message() << "\n";
        return 2;
      }
    }
    std::ifstream in(options->file);
    if (!in) {
      std::cerr << "flowsched compare: cannot open " << options->file << "\n";
      return 2;
    }
    ParsedEvents parsed = ParseJsonLines(in);
    for (const std::string& error : parsed.errors) {
      std::cerr << "flowsched compare: " << error << "\n";
    }
    fmt::print("{} events, a round every {} events\n", parsed.events.size(),
               options->round_every);
    fmt::print("{:<26} {:>7} {:>8} {:>8} {:>9} {:>10} {:>7} {:>7} {:>7}\n",
               "scheduler", "rounds", "placed", "waiting", "rejected",
               "sched_ms", "local", "rack", "remote");
    int exit_code = 0;
    for (const std::string& name : names) {
      auto contender =
          sim::MakeContender(name, std::string(solver::kDefaultSolver));
      if (!contender.ok()) {
        std::cerr << "flowsched compare: " << contender.status().message()
                  << "\n";
        return 2;
      }
      const Outcome o = Replay(
          name, std::move(*contender), parsed.events, options->round_every,
          static_cast<int64_t>(options->seconds_per_event * 1e6));
      if (!o.error.empty()) {
        std::cerr << "flowsched compare: " << name << ": " << o.error << "\n";
        exit_code = 1;
        continue;
      }
      const double total = static_cast<double>(o.local + o.rack + o.remote);
      auto pct = [&](int64_t v) {
        return total > 0 ? fmt::format("{:.1f}%",
                                       100.0 * static_cast<double>(v) / total)
                         : std::string("-");
      };
      fmt::print("{:<26} {:>7} {:>8} {:>8} {:>9} {:>10.1f} {:>7} {:>7} {:>7}\n",
                 o.name, o.rounds, o.placed, o.waiting, o.rejected, o.solve_ms,
                 pct(o.local), pct(o.rack), pct(o.remote));
    }
    return exit_code;
  };
}

}  // namespace flowsched::tools
