#include "tools/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <ostream>
#include <queue>

#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"
#include "services/cluster/cluster_state.h"
#include "services/cluster/resource_fit.h"
#include "services/common/clock.h"
#include "services/core/cut_policy.h"
#include "tools/sim/contender.h"

namespace flowsched::sim {
namespace {

enum class Kind { kMachineAdd, kMachineRemove, kSubmit, kFinish };

struct Event {
  int64_t time_us = 0;
  uint64_t seq = 0;
  Kind kind = Kind::kSubmit;
  size_t index = 0;         // into workload machines or tasks
  uint64_t generation = 0;  // kFinish: valid if the task's still matches
  bool operator>(const Event& o) const {
    return std::tie(time_us, seq) > std::tie(o.time_us, o.seq);
  }
};

class Simulation {
 public:
  Simulation(const Workload& workload, const SimOptions& options,
             std::unique_ptr<Contender> contender, SimResult& result)
      : workload_(workload),
        options_(options),
        contender_(std::move(contender)),
        result_(result),
        generation_(workload.tasks.size(), 0),
        first_placed_(workload.tasks.size(), false) {}

  absl::Status Run();

 private:
  int64_t Scale(int64_t t) const {
    return static_cast<int64_t>(
        std::llround(static_cast<double>(t) / options_.speedup));
  }
  // The clock the state and the policy see (SimOptions::policy_clock):
  // simulated time on it, a trace duration on it, and back to simulated.
  bool TraceClock() const {
    return options_.policy_clock == SimOptions::PolicyClock::kTrace;
  }
  int64_t PolicyTime(int64_t sim_us) const {
    if (!TraceClock()) return sim_us;
    return static_cast<int64_t>(
        std::llround(static_cast<double>(sim_us) * options_.speedup));
  }
  int64_t PolicyDuration(int64_t trace_us) const {
    return TraceClock() ? trace_us : Scale(trace_us);
  }
  int64_t SimTime(int64_t policy_us) const {
    return TraceClock() ? Scale(policy_us) : policy_us;
  }
  // The policy time a round starting at `sim_us` prices at
  // (SimOptions::price_at); monotone, as the policy's re-pricing expects.
  int64_t PriceTime(int64_t sim_us) {
    const int64_t ahead = options_.price_at == SimOptions::PriceAt::kDecision
                              ? last_round_us_
                              : 0;
    priced_us_ = std::max(priced_us_, PolicyTime(sim_us + ahead));
    return priced_us_;
  }
  void Push(int64_t time_us, Kind kind, size_t index, uint64_t generation = 0) {
    queue_.push(Event{time_us, seq_++, kind, index, generation});
  }
  void ApplyDue(int64_t now_us);
  void Apply(const Event& event);
  void AfterRound(const RoundDecisions& round, int64_t now_us,
                  bool warmup = false);
  void Progress(bool force);

  const Workload& workload_;
  const SimOptions& options_;
  std::unique_ptr<Contender> contender_;
  SimResult& result_;
  cluster::ClusterState state_;
  cluster::ChangeSet pending_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  uint64_t seq_ = 0;
  std::vector<uint64_t> generation_;
  std::vector<bool> first_placed_;
  absl::flat_hash_map<uint64_t, size_t> task_index_;
  int64_t horizon_us_ = 0;
  int64_t last_round_us_ = 0;  // simulated length of the last timed round
  int64_t priced_us_ = 0;      // the last PriceTime
  int64_t wall_start_us_ = 0;
  int64_t last_progress_us_ = 0;
  double fairness_ = 1;
};

void Simulation::Apply(const Event& event) {
  cluster::ChangeSet touched;
  absl::Status status;
  const int64_t policy_us = PolicyTime(event.time_us);
  switch (event.kind) {
    case Kind::kMachineAdd: {
      const SimMachine& m = workload_.machines[event.index];
      cluster::MachineAdded added{.machine = MachineId(m.id), .rack = m.rack};
      if (options_.model == Model::kSlots) {
        added.task_slots = options_.slots_per_machine;
      } else {
        added.task_slots = kCpuMemorySlots;
        added.capacity.cpu_millis = CpuMillis(m.cpu);
        added.capacity.memory_bytes = MemoryBytes(m.memory);
      }
      status = state_.Apply({"", policy_us, "sim", added}, policy_us, touched);
      break;
    }
    case Kind::kMachineRemove: {
      const MachineId id(workload_.machines[event.index].id);
      if (const cluster::Machine* m = state_.FindMachine(id)) {
        for (TaskId t : m->running) ++generation_[task_index_.at(t.value())];
      }
      status = state_.Apply({"", policy_us, "sim", cluster::MachineRemoved{id}},
                            policy_us, touched);
      break;
    }
    case Kind::kSubmit: {
      const SimTask& t = workload_.tasks[event.index];
      cluster::TaskSpec spec{.id = TaskId(t.task_id),
                             .priority = t.priority,
                             .input = t.input,
                             .input_bytes = t.input_bytes};
      if (options_.model == Model::kCpuMemory) {
        spec.request.cpu_millis = CpuMillis(t.cpu);
        spec.request.memory_bytes = MemoryBytes(t.memory);
      }
      const JobId job(t.job_id);
      if (state_.FindJob(job) != nullptr) {
        status = state_.Apply(
            {"", policy_us, "sim", cluster::TaskSubmitted{job, spec}},
            policy_us, touched);
      } else {
        cluster::JobSubmitted submitted{.job = job, .priority = t.priority};
        submitted.tasks.push_back(std::move(spec));
        status = state_.Apply({"", policy_us, "sim", std::move(submitted)},
                              policy_us, touched);
      }
      if (status.ok() && t.submit_us > 0) ++result_.submitted;
      break;
    }
    case Kind::kFinish: {
      const SimTask& t = workload_.tasks[event.index];
      const cluster::Task* task = state_.FindTask(TaskId(t.task_id));
      if (generation_[event.index] != event.generation || task == nullptr ||
          !task->running()) {
        return;  // preempted, migrated or its machine went away since
      }
      status = state_.Apply(
          {"", policy_us, "sim",
           cluster::TaskFinished{JobId(t.job_id), TaskId(t.task_id)}},
          policy_us, touched);
      if (status.ok()) ++result_.finished;
      break;
    }
  }
  if (!status.ok()) {
    ++result_.rejected_events;
    return;
  }
  pending_.Merge(touched);
}

void Simulation::ApplyDue(int64_t now_us) {
  while (!queue_.empty() && queue_.top().time_us <= now_us &&
         (queue_.top().time_us <= horizon_us_)) {
    const Event event = queue_.top();
    queue_.pop();
    Apply(event);
  }
}

void Simulation::AfterRound(const RoundDecisions& round, int64_t now_us,
                            bool warmup) {
  const uint64_t waiting = state_.waiting_task_count();
  // The time-0 population has been running for its age: its theta starts
  // there, as in the trace, not at 0 for all 146,000 tasks at once.
  std::function<int64_t(TaskId)> started_at;
  if (warmup) {
    started_at = [&](TaskId t) {
      return PolicyTime(now_us) -
             PolicyDuration(workload_.tasks[task_index_.at(t.value())].age_us);
    };
  }
  const AppliedDecisions applied =
      ApplyDecisions(round, state_, PolicyTime(now_us), pending_, started_at);
  for (TaskId t : applied.preempted_tasks) {
    ++generation_[task_index_.at(t.value())];
  }
  for (const auto& [task_id, machine_id] : applied.placed) {
    const size_t i = task_index_.at(task_id.value());
    const SimTask& t = workload_.tasks[i];
    const uint64_t generation = ++generation_[i];
    if (t.duration_us != kForever) {
      Push(now_us + std::max<int64_t>(1, Scale(t.duration_us)), Kind::kFinish,
           i, generation);
    }
    const cluster::Task* task = state_.FindTask(task_id);
    if (task != nullptr) {
      result_.locality.Add(InputLocality(state_, *task, machine_id));
    }
    if (!first_placed_[i]) {
      first_placed_[i] = true;
      if (t.submit_us > 0) {
        result_.placements.push_back(
            PlacementRecord{t.task_id, t.job_id, Scale(t.submit_us), now_us});
      } else {
        ++result_.initial_placed;
      }
    }
    // Place refuses what does not fit (cluster::FitTask); this guards that
    // promise in every dimension, devices included.
    if (const cluster::Machine* m = state_.FindMachine(machine_id)) {
      result_.capacity_violations += cluster::WithinCapacity(*m) ? 0 : 1;
    }
  }
  result_.preempted += applied.preempted;
  result_.migrated += applied.migrated;
  result_.stale += applied.stale;

  RoundRecord record{
      .round = result_.rounds.size() + 1,
      .start_us = now_us - std::llround(round.total_ms() * 1000.0),
      .runtime_ms = round.total_ms(),
      .sync_ms = round.sync_ms,
      .solve_ms = round.solve_ms,
      .check_ms = round.check_ms,
      .extract_ms = round.extract_ms,
      .algorithm = round.algorithm,
      .waiting = waiting,
      .running = state_.running_task_count(),
      .placed = applied.placed.size() - applied.migrated,
      .preempted = applied.preempted,
      .migrated = applied.migrated,
      .stale = applied.stale};
  if (state_.total_slots() > 0) {
    record.slot_utilisation = static_cast<double>(state_.running_task_count()) /
                              static_cast<double>(state_.total_slots());
  }
  if (options_.model == Model::kCpuMemory) {
    double used = 0, capacity = 0;
    for (const auto& [id, m] : state_.machines()) {
      used += static_cast<double>(m.allocated.cpu_millis);
      capacity += static_cast<double>(m.capacity.cpu_millis);
    }
    record.cpu_utilisation = capacity > 0 ? used / capacity : 0;
  }
  if (options_.fairness_every > 0 &&
      result_.rounds.size() % options_.fairness_every == 0) {
    fairness_ = FairShareJain(state_);
  }
  record.fairness = fairness_;
  result_.rounds.push_back(std::move(record));
}

void Simulation::Progress(bool force) {
  if (options_.progress == nullptr) return;
  const int64_t now = SteadyMicros();
  if (!force && static_cast<double>(now - last_progress_us_) <
                    options_.progress_every_s * 1e6) {
    return;
  }
  last_progress_us_ = now;
  *options_.progress << fmt::format(
      "[{}] round {} sim {:.1f}s wall {:.1f}s waiting {} running {} "
      "placed {}\n",
      result_.scheduler, result_.rounds.size(),
      static_cast<double>(SimTime(state_.last_time_us())) / 1e6,
      static_cast<double>(now - wall_start_us_) / 1e6,
      state_.waiting_task_count(), state_.running_task_count(),
      result_.placements.size() + result_.initial_placed);
  options_.progress->flush();
}

absl::Status Simulation::Run() {
  wall_start_us_ = SteadyMicros();
  last_progress_us_ = wall_start_us_;
  int64_t last_event = 0;
  for (size_t i = 0; i < workload_.machines.size(); ++i) {
    const SimMachine& m = workload_.machines[i];
    Push(Scale(m.add_us), Kind::kMachineAdd, i);
    last_event = std::max(last_event, Scale(m.add_us));
    if (m.remove_us != kForever && m.remove_us >= m.add_us) {
      Push(Scale(m.remove_us), Kind::kMachineRemove, i);
      last_event = std::max(last_event, Scale(m.remove_us));
    }
  }
  for (size_t i = 0; i < workload_.tasks.size(); ++i) {
    const SimTask& t = workload_.tasks[i];
    if (!task_index_.emplace(t.task_id, i).second) {
      return absl::InvalidArgumentError(
          fmt::format("task id {} repeats in the workload", t.task_id));
    }
    Push(Scale(t.submit_us), Kind::kSubmit, i);
    last_event = std::max(last_event, Scale(t.submit_us));
  }
  horizon_us_ = options_.horizon_us > 0 ? options_.horizon_us : last_event;

  int64_t now = 0;
  ApplyDue(now);
  // Warm-up: the population present at time 0 is placed by rounds that take
  // no simulated time (the trace starts with it running), so the cold start
  // does not count against the first arrivals. Their runtimes are recorded.
  // Once it runs, one more round takes in those placements: the policy's
  // Sync of ~146,000 tasks turning from waiting to running (0.5-1.0 s at
  // 12,500 machines) otherwise fell on the first measured round and on the
  // arrivals it kept waiting.
  bool placed_all = false;
  for (int warm = 0; warm < kSettleRounds && !pending_.empty(); ++warm) {
    auto round = contender_->Decide(state_, pending_, PriceTime(now));
    pending_.Clear();
    if (!round.ok()) {
      return absl::InternalError(fmt::format("warm-up round {}: {}", warm + 1,
                                             round.status().ToString()));
    }
    result_.warmup_s += round->total_ms() / 1000.0;
    AfterRound(*round, now, /*warmup=*/true);
    result_.rounds.back().start_us = 0;
    result_.rounds.back().warmup = true;
    Progress(false);
    // Done once the population runs and a round has taken that in (or a
    // round changes nothing). Not "no decisions": a preemptive policy may
    // keep migrating.
    if (round->decisions.empty() || placed_all) break;
    placed_all = state_.waiting_task_count() == 0;
  }
  // Where the time-0 population runs once placed: comparable with the
  // locality floor (ComputeLocalityFloor), which ignores later arrivals.
  for (const auto& [id, task] : state_.tasks()) {
    if (task.running()) {
      result_.warmup_locality.Add(InputLocality(state_, task, task.machine));
    }
  }
  // Wall time is measured from here: sim/wall compares the steady state.
  const int64_t measured_start_us = SteadyMicros();
  int settle = 0;
  // The graph manager's cut rule in its clock mode: a round whenever the
  // state changed and none is in flight (here rounds run one at a time).
  const core::CutPolicy cut_policy{core::CutOptions{}};
  while (true) {
    if (!cut_policy.RoundDue(/*network_changed=*/!pending_.empty(),
                             /*in_flight=*/false)) {
      if (queue_.empty() || queue_.top().time_us > horizon_us_) break;
      now = std::max(now, queue_.top().time_us);
      ApplyDue(now);
      continue;
    }
    if (now > horizon_us_ && ++settle > kSettleRounds) break;
    if (options_.max_wall_s > 0 &&
        static_cast<double>(SteadyMicros() - wall_start_us_) / 1e6 >
            options_.max_wall_s) {
      result_.truncated = true;
      break;
    }
    const int64_t start = SteadyMicros();
    auto round = contender_->Decide(state_, pending_, PriceTime(now));
    const int64_t elapsed = std::max<int64_t>(1, SteadyMicros() - start);
    pending_.Clear();
    if (!round.ok()) {
      return absl::InternalError(fmt::format(
          "round {} at {:.3f}s: {}", result_.rounds.size() + 1,
          static_cast<double>(now) / 1e6, round.status().ToString()));
    }
    // The round's own timing decides how much simulated time passes; the
    // wall time around Decide also holds the baseline's bookkeeping.
    last_round_us_ =
        std::max<int64_t>(elapsed, std::llround(round->total_ms() * 1000.0));
    now += last_round_us_;
    result_.busy_s += static_cast<double>(elapsed) / 1e6;
    AfterRound(*round, now);
    ApplyDue(now);
    Progress(false);
  }
  result_.sim_end_us = now;
  for (size_t i = 0; i < workload_.tasks.size(); ++i) {
    const SimTask& t = workload_.tasks[i];
    if (t.submit_us > 0 && Scale(t.submit_us) <= horizon_us_ &&
        !first_placed_[i]) {
      ++result_.unplaced;
    }
  }
  result_.wall_s =
      static_cast<double>(SteadyMicros() - measured_start_us) / 1e6;
  Progress(true);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SimResult> Simulate(const Workload& workload,
                                   const std::string& scheduler,
                                   const SimOptions& options) {
  if (!(options.speedup > 0) || !std::isfinite(options.speedup)) {
    return absl::InvalidArgumentError("speedup must be a positive number");
  }
  auto contender = MakeContender(scheduler, options.solver, options.export_dir,
                                 options.export_rounds);
  if (!contender.ok()) return contender.status();
  SimResult result;
  result.scheduler = scheduler;
  Simulation simulation(workload, options, std::move(*contender), result);
  if (auto s = simulation.Run(); !s.ok()) return s;
  return result;
}

}  // namespace flowsched::sim
