// Hand-run benchmark of one gang round (issue #32 item 6): at `--machines`
// machines of 8 GPUs under the cpu-memory policy (devices in the network),
// a gang of 64 tasks x 8 whole GPUs arrives, and the solver worker's
// core::RoundSolver (incremental repair) places it whole or refuses it
// within the round. Every machine but the free ones runs one one-GPU task.
// Cases: 64 free machines ("fits"); 63 free and 10 one-GPU tasks arriving
// beside the gang ("refused": they take room the gang cannot use); 64 free
// with the 10 small tasks ("small-first": the small tasks' share of the
// free machines leaves the gang short, so it waits); the same with the
// gang past its hold age ("held": the room is the gang's); and that again
// with cpu-memory's gang_first_after_s as short ("held-first": the gang's
// shape is offered every machine's room first, so the small tasks' share
// never leaves it short). Prints the
// round's solve time (all passes), passes and check / extraction time.
// Never run by ctest:
//
//   build/tools/bench/gang_round_bench [--machines 12500]

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "services/cluster/change_set.h"
#include "services/cluster/cluster_state.h"
#include "services/common/clock.h"
#include "services/core/gang_requirements.h"
#include "services/core/policy_network.h"
#include "services/core/round_solver.h"

namespace flowsched {
namespace {

constexpr uint32_t kGangTasks = 64;
constexpr uint32_t kGpusPerMachine = 8;
constexpr uint64_t kGangJob = 1'000'000;
constexpr uint64_t kSmallJob = 1'000'001;

absl::Status Event(cluster::ClusterState& state, cluster::ChangeSet& changes,
                   cluster::EventBody body) {
  return state.Apply(cluster::ClusterEvent{"e", 1, "bench", std::move(body)}, 1,
                     changes);
}

cluster::TaskSpec GpuTask(uint64_t id, uint32_t gpus) {
  cluster::TaskSpec spec;
  spec.id = TaskId(id);
  spec.request.cpu_millis = 1000;
  spec.request.memory_bytes = int64_t{1} << 30;
  spec.accelerator.whole = gpus;
  return spec;
}

// Runs one case; false on any error (printed).
bool RunCase(uint64_t machines, uint64_t free_machines, uint32_t small_tasks,
             int64_t hold_after_us, const char* name,
             const char* policy_spec = "cpu-memory") {
  cluster::ClusterState state;
  cluster::ChangeSet changes;
  absl::Status status;
  for (uint64_t m = 1; m <= machines; ++m) {
    cluster::MachineAdded added;
    added.machine = MachineId(m);
    added.rack = fmt::format("r{}", m / 40);
    added.capacity = {64'000, int64_t{512} << 30, 0, {}};
    added.task_slots = 32;
    added.accelerators = {{kGpusPerMachine, "a100", 1000, 0}};
    status.Update(Event(state, changes, added));
  }
  // Background: one one-GPU task on every machine but the free ones,
  // placed directly (as if earlier rounds had).
  cluster::JobSubmitted background;
  background.job = JobId(1);
  for (uint64_t m = free_machines + 1; m <= machines; ++m) {
    background.tasks.push_back(GpuTask(m, 1));
  }
  status.Update(Event(state, changes, background));
  for (uint64_t m = free_machines + 1; m <= machines; ++m) {
    status.Update(state.Place(TaskId(m), MachineId(m), 1, changes));
  }
  core::PolicyNetwork policy;
  status.Update(policy.Adopt(policy_spec));
  policy.network().set_record_changes(true);
  auto round_solver = core::RoundSolver::Create(core::kIncrementalRounds);
  if (!status.ok() || !round_solver.ok()) {
    fmt::print(stderr, "setup: {} {}\n", status.ToString(),
               round_solver.status().ToString());
    return false;
  }
  const auto round = [&](int64_t now_us, const char* what) {
    status.Update(policy.Sync(changes, state, now_us));
    status.Update(policy.Refresh(state, now_us));  // as before a cut
    changes.Clear();
    for (const flow::GraphChange& change : policy.network().TakeChanges()) {
      status.Update((*round_solver)->Apply(change));
    }
    const int64_t start_us = SteadyMicros();
    const std::vector<core::GangRequirement> gangs =
        core::GangRequirementsOf(state, now_us, hold_after_us);
    const double gangs_ms =
        static_cast<double>(SteadyMicros() - start_us) / 1000.0;
    core::SolvedRound solved = (*round_solver)->Solve(false, gangs);
    uint32_t gang_placed = 0, small_placed = 0;
    for (const core::Decision& d : solved.decisions) {
      gang_placed += d.job == JobId(kGangJob);
      small_placed += d.job == JobId(kSmallJob);
    }
    fmt::print(
        "{:8} {:10} machines {:6} verdict {:3} passes {} solve {:8.1f} ms "
        "check+extract {:7.1f} ms requirements {:5.2f} ms algorithm {} "
        "gang placed {:2}/{} small placed {:2} withdrawn {} held {}\n",
        name, what, machines, solved.verdict.ok() ? "ok" : "BAD", solved.passes,
        solved.solve_ms, solved.check_extract_ms, gangs_ms, solved.algorithm,
        gang_placed, kGangTasks, small_placed, solved.gangs_withdrawn.size(),
        solved.held);
    return solved.verdict.ok();
  };
  if (!round(2, "warm-up")) return false;
  cluster::JobSubmitted gang;
  gang.job = JobId(kGangJob);
  gang.min_members = kGangTasks;
  for (uint32_t t = 0; t < kGangTasks; ++t) {
    gang.tasks.push_back(GpuTask(10'000'000 + t, kGpusPerMachine));
  }
  status.Update(Event(state, changes, gang));
  cluster::JobSubmitted small;
  small.job = JobId(kSmallJob);
  for (uint32_t t = 0; t < small_tasks; ++t) {
    small.tasks.push_back(GpuTask(20'000'000 + t, 1));
  }
  if (small_tasks > 0) status.Update(Event(state, changes, small));
  const bool ok = round(3, "gang");
  if (!status.ok()) fmt::print(stderr, "{}\n", status.ToString());
  return ok && status.ok();
}

}  // namespace
}  // namespace flowsched

int main(int argc, char** argv) {
  uint64_t machines = 12'500;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--machines") == 0) {
      machines = std::stoull(argv[i + 1]);
    }
  }
  if (machines < 100) machines = 100;
  constexpr int64_t kNoHold = 0;
  bool ok = flowsched::RunCase(machines, 64, 0, kNoHold, "fits");
  ok = flowsched::RunCase(machines, 63, 10, kNoHold, "refused") && ok;
  ok = flowsched::RunCase(machines, 64, 10, kNoHold, "small-first") && ok;
  ok = flowsched::RunCase(machines, 64, 10, 1, "held") && ok;
  ok = flowsched::RunCase(machines, 64, 10, 1, "held-first",
                          "cpu-memory:gang_first_after_s=0.000001") &&
       ok;
  return ok ? 0 : 1;
}
