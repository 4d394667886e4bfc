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

#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "services/baselines/baseline_scheduler.h"
#include "services/cluster/cluster_state.h"
#include "services/cluster/event_decoder.h"
#include "services/common/clock.h"
#include "services/flow/flow_network.h"
#include "services/flow/network_builder.h"
#include "services/flow/placement_extractor.h"
#include "services/flow/scheduling_policy.h"
#include "services/solver/flow_checker.h"
#include "services/solver/solver_registry.h"
#include "tools/flowsched/commands.h"
#include "tools/flowsched/event_submitter.h"

namespace flowsched::tools {
namespace {

struct Outcome {
  std::string name;
  uint64_t rounds = 0, placed = 0, waiting = 0, rejected = 0;
  double solve_ms = 0;
  int64_t local = 0, rack = 0, remote = 0;  // input bytes of running tasks
  std::string error;
};

// One scheduler as the replay sees it: after each slice of events it gets
// the state and the touched entities and changes the state by placing.
class Contender {
 public:
  virtual ~Contender() = default;
  virtual absl::Status Round(cluster::ClusterState& state,
                             const cluster::ChangeSet& changes, int64_t now_us,
                             Outcome& outcome) = 0;
};

class BaselineContender final : public Contender {
 public:
  explicit BaselineContender(std::unique_ptr<baselines::BaselineScheduler> s)
      : scheduler_(std::move(s)) {}
  absl::Status Round(cluster::ClusterState& state, const cluster::ChangeSet&,
                     int64_t now_us, Outcome& outcome) override {
    const int64_t start = SteadyMicros();
    const auto placements = scheduler_->Schedule(state);
    outcome.solve_ms += static_cast<double>(SteadyMicros() - start) / 1000.0;
    for (const auto& p : placements) {
      cluster::ChangeSet ignored;
      if (!state.Place(p.task, p.machine, now_us, ignored).ok()) {
        return absl::InternalError("a baseline placement did not fit");
      }
    }
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<baselines::BaselineScheduler> scheduler_;
};

class FlowContender final : public Contender {
 public:
  explicit FlowContender(std::unique_ptr<flow::SchedulingPolicy> policy)
      : policy_(std::move(policy)) {}
  absl::Status Round(cluster::ClusterState& state,
                     const cluster::ChangeSet& changes, int64_t now_us,
                     Outcome& outcome) override {
    const flow::SyncContext context{now_us};
    if (auto s = policy_->Sync(changes, state, context, builder_); !s.ok()) {
      return s;
    }
    if (policy_->time_dependent()) {
      if (auto s = policy_->Refresh(state, context, builder_); !s.ok()) return s;
    }
    solver::McmfProblem problem;
    std::vector<flow::ArcSlot> slots;
    network_.ExportProblem(problem, slots);
    const int64_t start = SteadyMicros();
    auto solution = solver_->Solve(problem);
    outcome.solve_ms += static_cast<double>(SteadyMicros() - start) / 1000.0;
    if (!solution.ok()) return solution.status();
    if (solution->outcome != solver::McmfOutcome::kOptimal) {
      return absl::InternalError("the network is infeasible");
    }
    if (auto s = solver::CheckOptimalFlow(problem, *solution); !s.ok()) return s;
    std::vector<int64_t> flow_by_slot(network_.arc_slot_count(), 0);
    for (size_t i = 0; i < slots.size(); ++i) {
      flow_by_slot[slots[i]] += solution->flow[i];
    }
    auto placements = flow::ExtractPlacements(network_, flow_by_slot);
    if (!placements.ok()) return placements.status();
    // As the graph manager applies a round: preemptions, migrations,
    // placements; what no longer fits is stale and waits.
    cluster::ChangeSet applied;
    for (int pass = 0; pass < 3; ++pass) {
      for (const flow::TaskPlacement& p : *placements) {
        if (p.machine_id == p.running_on) continue;
        const TaskId task(p.task_id);
        if (pass == 0 && p.machine_id == 0) {
          state.Preempt(task, now_us, applied).IgnoreError();  // stale: skip
        } else if (pass == 1 && p.machine_id != 0 && p.running_on != 0) {
          state.Migrate(task, MachineId(p.running_on), MachineId(p.machine_id),
                        now_us, applied)
              .IgnoreError();  // stale: skip
        } else if (pass == 2 && p.machine_id != 0 && p.running_on == 0) {
          state.Place(task, MachineId(p.machine_id), now_us, applied)
              .IgnoreError();  // stale: skip
        }
      }
    }
    return policy_->Sync(applied, state, context, builder_);
  }

 private:
  std::unique_ptr<flow::SchedulingPolicy> policy_;
  flow::FlowNetwork network_;
  flow::NetworkBuilder builder_{network_};
  std::unique_ptr<solver::McmfSolver> solver_ =
      std::move(solver::MakeSolver(solver::kDefaultSolver)).value();
};

void CountLocality(const cluster::ClusterState& state, Outcome& outcome) {
  for (const auto& [id, task] : state.tasks()) {
    if (!task.running()) {
      ++outcome.waiting;
      continue;
    }
    ++outcome.placed;
    const cluster::Machine* machine = state.FindMachine(task.machine);
    int64_t local = 0, rack = 0;
    for (const cluster::DataLocality& input : task.spec.input) {
      if (input.machine == task.machine) {
        local += input.bytes;
      } else if (input.machine.value() != 0) {
        const cluster::Machine* holder = state.FindMachine(input.machine);
        if (holder != nullptr && machine != nullptr &&
            holder->rack == machine->rack) {
          rack += input.bytes;
        }
      } else if (machine != nullptr && input.rack == machine->rack) {
        rack += input.bytes;
      }
    }
    const int64_t total = std::max(task.spec.input_bytes, local + rack);
    outcome.local += local;
    outcome.rack += rack;
    outcome.remote += total - local - rack;
  }
}

// Events without a time are spaced `step_us` apart: time-dependent costs
// (Quincy's waiting time) need time to pass between rounds.
Outcome Replay(const std::string& name, std::unique_ptr<Contender> contender,
               const std::vector<v1::ClusterEvent>& events, size_t round_every,
               int64_t step_us) {
  Outcome outcome{.name = name};
  const cluster::EventDecoder decoder{cluster::ValidationLimits{}};
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  int64_t now_us = 0;
  auto round = [&]() -> bool {
    ++outcome.rounds;
    absl::Status s = contender->Round(state, changes, now_us, outcome);
    changes.Clear();
    if (!s.ok()) outcome.error = s.ToString();
    return s.ok();
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
                  "Comma-separated: flow:<policy>, greedy, greedy-fair, "
                  "filter-score")
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
    for (const std::string& name :
         std::vector<std::string>(absl::StrSplit(options->schedulers, ','))) {
      std::unique_ptr<Contender> contender;
      if (name.rfind("flow:", 0) == 0) {
        auto policy = flow::MakePolicy(name.substr(5));
        if (!policy.ok()) {
          std::cerr << "flowsched compare: " << policy.status().message() << "\n";
          return 2;
        }
        contender = std::make_unique<FlowContender>(std::move(*policy));
      } else {
        auto baseline = baselines::MakeBaseline(name);
        if (!baseline.ok()) {
          std::cerr << "flowsched compare: " << baseline.status().message() << "\n";
          return 2;
        }
        contender = std::make_unique<BaselineContender>(std::move(*baseline));
      }
      const Outcome o =
          Replay(name, std::move(contender), parsed.events, options->round_every,
                 static_cast<int64_t>(options->seconds_per_event * 1e6));
      if (!o.error.empty()) {
        std::cerr << "flowsched compare: " << name << ": " << o.error << "\n";
        exit_code = 1;
        continue;
      }
      const double total = static_cast<double>(o.local + o.rack + o.remote);
      auto pct = [&](int64_t v) {
        return total > 0 ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(v) / total)
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
