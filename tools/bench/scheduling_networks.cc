#include "tools/bench/scheduling_networks.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include "absl/status/statusor.h"
#include "services/solver/cost_scaling.h"
#include "services/solver/relaxation.h"

namespace flowsched::bench {
namespace {

constexpr uint32_t kSink = 0;
constexpr uint32_t kClusterAggregator = 1;
constexpr solver::McmfArc kDeadArc{
    .src = kSink, .dst = kSink, .capacity = 0, .cost = 0};

bool SameArc(const solver::McmfArc& a, const solver::McmfArc& b) {
  return a.src == b.src && a.dst == b.dst && a.capacity == b.capacity &&
         a.cost == b.cost;
}

void PushMin(std::vector<uint32_t>& heap, uint32_t value) {
  heap.push_back(value);
  std::push_heap(heap.begin(), heap.end(), std::greater<>());
}

uint32_t PopMin(std::vector<uint32_t>& heap) {
  std::pop_heap(heap.begin(), heap.end(), std::greater<>());
  const uint32_t value = heap.back();
  heap.pop_back();
  return value;
}

}  // namespace

std::string JobSizesName(JobSizes sizes) {
  switch (sizes) {
    case JobSizes::kUniform:
      return "uniform";
    case JobSizes::kGeometric:
      return "geometric";
    case JobSizes::kHeavyTailed:
      return "pareto";
    case JobSizes::kFixed:
      return "fixed";
  }
  return "?";
}

std::string ShapeName(NetworkShape shape) {
  return shape == NetworkShape::kQuincy ? "quincy" : "load-spreading";
}

// std::uniform_int_distribution differs between standard libraries; modulo
// on mt19937_64 keeps networks identical everywhere (as test_graphs.cc).
int64_t ClusterNetwork::Uniform(int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(rng_() % span);
}

double ClusterNetwork::UnitReal() {
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

int64_t ClusterNetwork::DrawJobSize() {
  const int64_t mean = std::max<uint32_t>(1, shape_.mean_tasks_per_job);
  switch (shape_.job_sizes) {
    case JobSizes::kUniform:
      return Uniform(1, 2 * mean - 1);
    case JobSizes::kGeometric: {
      if (mean == 1) return 1;
      const double p = 1.0 / static_cast<double>(mean);
      return 1 + static_cast<int64_t>(std::log1p(-UnitReal()) / std::log1p(-p));
    }
    case JobSizes::kHeavyTailed: {
      // Pareto with shape a has mean a * x_min / (a - 1) = 11 x_min.
      constexpr double kShape = 1.1;
      const double x_min = std::max(1.0, static_cast<double>(mean) / 11.0);
      const double size = x_min * std::pow(1.0 - UnitReal(), -1.0 / kShape);
      return std::clamp<int64_t>(static_cast<int64_t>(size), 1, 50 * mean);
    }
    case JobSizes::kFixed:
      return mean;
  }
  return mean;
}

ClusterNetwork::ClusterNetwork(const ClusterShape& shape,
                               const IncrementalOptions& options)
    : shape_(shape), options_(options), rng_(shape.seed) {
  const bool quincy = shape_.shape == NetworkShape::kQuincy;
  const uint32_t slots = shape_.slots_per_machine;
  const uint32_t per_rack = std::max<uint32_t>(1, shape_.machines_per_rack);
  AllocNode(0);  // sink
  AllocNode(0);  // X
  if (quincy) {
    rack_count_ = (shape_.machines + per_rack - 1) / per_rack;
    for (uint32_t r = 0; r < rack_count_; ++r) {
      const uint32_t node = AllocNode(0);
      rack_first_machine_.push_back(r * per_rack);
      rack_arcs_.push_back(AllocArc(
          {.src = kClusterAggregator, .dst = node, .capacity = 0, .cost = 0}));
    }
  }
  machines_.resize(shape_.machines);
  for (uint32_t m = 0; m < shape_.machines; ++m) {
    Machine& machine = machines_[m];
    machine.rack = m / per_rack;
    machine.node = AllocNode(0);
    machine.sink_arc = AllocArc(
        {.src = machine.node, .dst = kSink, .capacity = slots, .cost = 0});
    if (quincy) {
      // Rack r's node is 2 + r.
      machine.rack_arc = AllocArc({.src = 2 + machine.rack,
                                   .dst = machine.node,
                                   .capacity = slots,
                                   .cost = 0});
    } else {
      for (uint32_t k = 0; k < slots; ++k) {
        machine.piece_arcs.push_back(AllocArc(kDeadArc));
      }
      UpdateMachineArcs(m);
    }
  }
  for (uint32_t r = 0; r < rack_count_; ++r) UpdateRackArc(r);

  const uint64_t total_slots = uint64_t{shape_.machines} * slots;
  const auto task_count = static_cast<uint64_t>(
      std::llround(shape_.utilisation * static_cast<double>(total_slots)));
  const auto running_count = static_cast<uint64_t>(
      std::llround(shape_.running_fraction *
                   static_cast<double>(std::min(task_count, total_slots))));
  // Running tasks occupy a uniform sample of the slots (partial
  // Fisher-Yates), so per-machine load varies as in a real cluster.
  std::vector<uint32_t> slot_machine(total_slots);
  for (uint64_t s = 0; s < total_slots; ++s) {
    slot_machine[s] = static_cast<uint32_t>(s / slots);
  }
  for (uint64_t s = 0; s < running_count; ++s) {
    const auto pick = static_cast<uint64_t>(Uniform(
        static_cast<int64_t>(s), static_cast<int64_t>(total_slots) - 1));
    std::swap(slot_machine[s], slot_machine[pick]);
  }
  // Which tasks run: a random subset of size running_count.
  std::vector<bool> runs(task_count, false);
  for (uint64_t i = 0; i < running_count; ++i) runs[i] = true;
  for (uint64_t i = task_count; i > 1; --i) {
    const auto j =
        static_cast<uint64_t>(Uniform(0, static_cast<int64_t>(i) - 1));
    const bool tmp = runs[i - 1];
    runs[i - 1] = runs[j];
    runs[j] = tmp;
  }
  uint64_t next_slot = 0;
  uint64_t created = 0;
  while (created < task_count) {
    const uint32_t job = AddJob();
    const auto size = std::min<uint64_t>(static_cast<uint64_t>(DrawJobSize()),
                                         task_count - created);
    for (uint64_t i = 0; i < size; ++i, ++created) {
      AddTask(job, runs[created] ? int64_t{slot_machine[next_slot++]} : -1);
    }
  }
  if (shape_.new_job_tasks > 0) {
    const uint32_t job = AddJob();
    for (uint32_t i = 0; i < shape_.new_job_tasks; ++i) AddTask(job, -1);
  }
  tracking_ = true;
}

uint32_t ClusterNetwork::AllocNode(int64_t supply) {
  uint32_t node;
  if (!free_nodes_.empty()) {
    node = PopMin(free_nodes_);
    problem_.supply[node] = supply;
  } else {
    node = problem_.node_count++;
    problem_.supply.push_back(supply);
  }
  TouchNode(node);
  return node;
}

void ClusterNetwork::FreeNode(uint32_t node) {
  problem_.supply[node] = 0;
  PushMin(free_nodes_, node);
  TouchNode(node);
}

uint32_t ClusterNetwork::AllocArc(const solver::McmfArc& arc) {
  uint32_t index;
  if (!free_arcs_.empty()) {
    index = PopMin(free_arcs_);
    SetArc(index, arc);
  } else {
    index = static_cast<uint32_t>(problem_.arcs.size());
    problem_.arcs.push_back(arc);
    TouchArc(index);
  }
  return index;
}

void ClusterNetwork::SetArc(uint32_t index, const solver::McmfArc& arc) {
  if (SameArc(problem_.arcs[index], arc)) return;
  problem_.arcs[index] = arc;
  TouchArc(index);
}

void ClusterNetwork::FreeArc(uint32_t index) {
  SetArc(index, kDeadArc);
  PushMin(free_arcs_, index);
}

void ClusterNetwork::TouchNode(uint32_t node) {
  if (tracking_) changed_nodes_.push_back(node);
}

void ClusterNetwork::TouchArc(uint32_t arc) {
  if (tracking_) changed_arcs_.push_back(arc);
}

uint32_t ClusterNetwork::AddJob() {
  uint32_t id = 0;
  while (id < jobs_.size() && jobs_[id].live) ++id;
  if (id == jobs_.size()) jobs_.emplace_back();
  Job& job = jobs_[id];
  job.live = true;
  job.tasks = 0;
  job.node = AllocNode(0);
  job.sink_arc =
      AllocArc({.src = job.node, .dst = kSink, .capacity = 0, .cost = 0});
  // Quincy's upsilon = omega * seconds waited (omega = 0.5); jobs that have
  // waited long make leaving their tasks unscheduled expensive.
  job.unscheduled_base = Uniform(250, 1500);
  return id;
}

void ClusterNetwork::ListAdd(std::vector<uint32_t>& list, uint32_t task) {
  tasks_[task].list_pos = static_cast<uint32_t>(list.size());
  list.push_back(task);
}

void ClusterNetwork::ListRemove(std::vector<uint32_t>& list, uint32_t task) {
  const uint32_t pos = tasks_[task].list_pos;
  list[pos] = list.back();
  tasks_[list[pos]].list_pos = pos;
  list.pop_back();
}

void ClusterNetwork::AddTask(uint32_t job, int64_t machine) {
  uint32_t id;
  if (!free_task_ids_.empty()) {
    id = free_task_ids_.back();
    free_task_ids_.pop_back();
  } else {
    id = static_cast<uint32_t>(tasks_.size());
    tasks_.emplace_back();
  }
  Task& task = tasks_[id];
  task.live = true;
  task.job = job;
  task.machine = machine;
  task.node = AllocNode(1);
  ++live_tasks_;
  --problem_.supply[kSink];
  TouchNode(kSink);
  Job& owner = jobs_[job];
  ++owner.tasks;
  SetArc(owner.sink_arc,
         {.src = owner.node, .dst = kSink, .capacity = owner.tasks, .cost = 0});
  if (machine >= 0) {
    ListAdd(running_, id);
    ++machines_[static_cast<size_t>(machine)].running;
    UpdateMachineArcs(static_cast<uint32_t>(machine));
  } else {
    ListAdd(waiting_, id);
  }
  BuildTaskArcs(tasks_[id]);
}

void ClusterNetwork::RemoveTask(uint32_t id) {
  Task& task = tasks_[id];
  if (task.machine >= 0) {
    ListRemove(running_, id);
    const auto m = static_cast<uint32_t>(task.machine);
    --machines_[m].running;
    UpdateMachineArcs(m);
  } else {
    ListRemove(waiting_, id);
  }
  FreeTaskArcs(task);
  FreeNode(task.node);
  task.live = false;
  free_task_ids_.push_back(id);
  --live_tasks_;
  ++problem_.supply[kSink];
  TouchNode(kSink);
  Job& job = jobs_[task.job];
  --job.tasks;
  if (job.tasks == 0) {
    FreeArc(job.sink_arc);
    FreeNode(job.node);
    job.live = false;
  } else {
    SetArc(job.sink_arc,
           {.src = job.node, .dst = kSink, .capacity = job.tasks, .cost = 0});
  }
}

void ClusterNetwork::BuildTaskArcs(Task& task) {
  const Job& job = jobs_[task.job];
  const bool running = task.machine >= 0;
  if (shape_.shape == NetworkShape::kLoadSpreading) {
    task.arcs.push_back(
        AllocArc({.src = task.node,
                  .dst = job.node,
                  .capacity = 1,
                  .cost = shape_.cost_scale *
                          (running ? kLsPreemptionCost : kLsUnscheduledCost)}));
    const uint32_t target =
        running ? machines_[static_cast<size_t>(task.machine)].node
                : kClusterAggregator;
    task.arcs.push_back(
        AllocArc({.src = task.node, .dst = target, .capacity = 1, .cost = 0}));
    return;
  }
  // Quincy (SOSP 2009 section 4.2, appendix) with omega = 0.5, psi = 1,
  // xi = 2 folded into the random data-transfer costs.
  // Costs are drawn at scale 1 and multiplied, so cost_scale changes no
  // draw.
  const int64_t scale = shape_.cost_scale;
  const int64_t upsilon = job.unscheduled_base + Uniform(0, 500);
  const int64_t alpha = Uniform(300, 1200);
  task.arcs.push_back(AllocArc({.src = task.node,
                                .dst = job.node,
                                .capacity = 1,
                                .cost = scale * upsilon}));
  task.arcs.push_back(AllocArc({.src = task.node,
                                .dst = kClusterAggregator,
                                .capacity = 1,
                                .cost = scale * alpha}));
  const int64_t preferences =
      Uniform(shape_.min_preferences,
              std::max(shape_.min_preferences, shape_.max_preferences));
  for (int64_t p = 0; p < preferences; ++p) {
    if (rack_count_ > 0 && Uniform(0, 3) == 0) {
      const auto rack = static_cast<uint32_t>(Uniform(0, rack_count_ - 1));
      task.arcs.push_back(
          AllocArc({.src = task.node,
                    .dst = 2 + rack,
                    .capacity = 1,
                    .cost = scale * Uniform(alpha / 3, 2 * alpha / 3)}));
    } else {
      const auto m = static_cast<size_t>(Uniform(0, shape_.machines - 1));
      task.arcs.push_back(AllocArc({.src = task.node,
                                    .dst = machines_[m].node,
                                    .capacity = 1,
                                    .cost = scale * Uniform(0, alpha / 3)}));
    }
  }
  if (running) AddRunningArc(task);
}

void ClusterNetwork::AddRunningArc(Task& task) {
  // d* - p*: data cost on the current machine minus the seconds already
  // run, so long-running tasks become ever cheaper to keep.
  task.arcs.push_back(
      AllocArc({.src = task.node,
                .dst = machines_[static_cast<size_t>(task.machine)].node,
                .capacity = 1,
                .cost = shape_.cost_scale * Uniform(-400, 200)}));
}

void ClusterNetwork::FreeTaskArcs(Task& task) {
  for (const uint32_t arc : task.arcs) FreeArc(arc);
  task.arcs.clear();
}

void ClusterNetwork::StartTask(uint32_t id, uint32_t machine) {
  Task& task = tasks_[id];
  ListRemove(waiting_, id);
  ListAdd(running_, id);
  task.machine = machine;
  ++machines_[machine].running;
  UpdateMachineArcs(machine);
  if (shape_.shape == NetworkShape::kQuincy) {
    // The task keeps its preferences (its input data stays where it is)
    // and gains the arc to the machine it runs on.
    AddRunningArc(task);
    return;
  }
  FreeTaskArcs(task);
  BuildTaskArcs(task);
}

void ClusterNetwork::StopTask(uint32_t id) {
  Task& task = tasks_[id];
  const auto machine = static_cast<uint32_t>(task.machine);
  ListRemove(running_, id);
  ListAdd(waiting_, id);
  task.machine = -1;
  --machines_[machine].running;
  UpdateMachineArcs(machine);
  if (shape_.shape == NetworkShape::kQuincy) {
    FreeArc(task.arcs.back());  // the running arc (AddRunningArc)
    task.arcs.pop_back();
    return;
  }
  FreeTaskArcs(task);
  BuildTaskArcs(task);
}

void ClusterNetwork::UpdateMachineArcs(uint32_t m) {
  Machine& machine = machines_[m];
  const int64_t slots = machine.failed ? 0 : shape_.slots_per_machine;
  SetArc(machine.sink_arc,
         {.src = machine.node, .dst = kSink, .capacity = slots, .cost = 0});
  if (shape_.shape == NetworkShape::kQuincy) {
    SetArc(machine.rack_arc, {.src = 2 + machine.rack,
                              .dst = machine.node,
                              .capacity = slots,
                              .cost = 0});
    return;
  }
  // Convex X -> M arc as parallel unit pieces, one per slot with a fixed
  // cost: slot s costs per_task_cost * s and is open (capacity 1) while it
  // is free, i.e. s > running. The open pieces' costs are exactly
  // per_task_cost * (running + k) for the k-th further task
  // (load_spreading_policy.h), but a task starting or finishing changes
  // one piece's capacity instead of every piece's cost, so a round's churn
  // does not move reduced costs on the whole machine (every cost change on
  // an arc with flow forces a cancellation and a Dijkstra phase in the
  // incremental solver; see tools/bench/README.md).
  for (size_t k = 0; k < machine.piece_arcs.size(); ++k) {
    const auto slot = static_cast<int64_t>(k) + 1;
    SetArc(
        machine.piece_arcs[k],
        {.src = kClusterAggregator,
         .dst = machine.node,
         .capacity = slot > int64_t{machine.running} && slot <= slots ? 1 : 0,
         .cost = shape_.cost_scale * kLsPerTaskCost * slot});
  }
}

void ClusterNetwork::UpdateRackArc(uint32_t rack) {
  int64_t capacity = 0;
  for (uint32_t m = rack_first_machine_[rack];
       m < shape_.machines && machines_[m].rack == rack; ++m) {
    if (!machines_[m].failed) capacity += shape_.slots_per_machine;
  }
  SetArc(rack_arcs_[rack], {.src = kClusterAggregator,
                            .dst = 2 + rack,
                            .capacity = capacity,
                            .cost = 0});
}

void ClusterNetwork::FailMachine(uint32_t m) {
  machines_[m].failed = true;
  std::vector<uint32_t> victims;
  for (const uint32_t id : running_) {
    if (tasks_[id].machine == int64_t{m}) victims.push_back(id);
  }
  for (const uint32_t id : victims) StopTask(id);
  UpdateMachineArcs(m);
  if (rack_count_ > 0) UpdateRackArc(machines_[m].rack);
}

void ClusterNetwork::RecoverMachine(uint32_t m) {
  machines_[m].failed = false;
  UpdateMachineArcs(m);
  if (rack_count_ > 0) UpdateRackArc(machines_[m].rack);
}

bool ClusterNetwork::HasRoom(uint32_t m) const {
  return !machines_[m].failed &&
         machines_[m].running < shape_.slots_per_machine;
}

int64_t ClusterNetwork::PickFreeMachine() {
  for (int attempt = 0; attempt < 64; ++attempt) {
    const auto m = static_cast<uint32_t>(Uniform(0, shape_.machines - 1));
    if (HasRoom(m)) return m;
  }
  const auto start = static_cast<uint32_t>(Uniform(0, shape_.machines - 1));
  for (uint32_t i = 0; i < shape_.machines; ++i) {
    const uint32_t m = (start + i) % shape_.machines;
    if (HasRoom(m)) return m;
  }
  return -1;
}

std::vector<int64_t> ClusterNetwork::OptimumPlacements(
    const std::vector<int64_t>* last_flow) const {
  std::vector<int64_t> placement(tasks_.size(), -1);
  absl::StatusOr<solver::McmfSolution> solution;
  if (last_flow == nullptr || last_flow->size() != problem_.arcs.size()) {
    // Deterministic exact solvers, the faster one per shape (relaxation is
    // ~30x cost scaling's time on load spreading, cost scaling ~2x
    // relaxation's on Quincy).
    solution = shape_.shape == NetworkShape::kQuincy
                   ? solver::Relaxation().Solve(problem_)
                   : solver::CostScaling().Solve(problem_);
    if (!solution.ok() || solution->outcome != solver::McmfOutcome::kOptimal) {
      return placement;
    }
    last_flow = &solution->flow;
  }
  const std::vector<int64_t>& flow = *last_flow;
  std::vector<int64_t> machine_of_node(problem_.node_count, -1);
  // Units each machine receives through the aggregators (Quincy: R -> M;
  // load spreading: X -> M pieces), and each rack through X -> R.
  std::vector<int64_t> via_aggregator(machines_.size(), 0);
  for (uint32_t m = 0; m < machines_.size(); ++m) {
    const Machine& machine = machines_[m];
    machine_of_node[machine.node] = m;
    if (shape_.shape == NetworkShape::kQuincy) {
      via_aggregator[m] = flow[machine.rack_arc];
    } else {
      for (const uint32_t piece : machine.piece_arcs) {
        via_aggregator[m] += flow[piece];
      }
    }
  }
  std::vector<int64_t> via_x(rack_count_, 0);
  for (uint32_t r = 0; r < rack_count_; ++r) via_x[r] = flow[rack_arcs_[r]];
  // Splits aggregated flow over machines in index order: rack r's units
  // go to its machines, X's (load spreading) to every machine.
  std::vector<uint32_t> rack_cursor(rack_count_, 0);
  uint32_t x_cursor = 0;
  uint32_t rack_of_x_cursor = 0;
  auto take_machine = [&](uint32_t first, uint32_t count,
                          uint32_t& cursor) -> int64_t {
    while (cursor < count && via_aggregator[first + cursor] <= 0) ++cursor;
    if (cursor == count) return -1;
    --via_aggregator[first + cursor];
    return first + cursor;
  };
  const uint32_t per_rack = std::max<uint32_t>(1, shape_.machines_per_rack);
  auto take_from_rack = [&](uint32_t r) -> int64_t {
    const uint32_t first = rack_first_machine_[r];
    const uint32_t count = std::min<uint32_t>(
        per_rack, static_cast<uint32_t>(machines_.size()) - first);
    return take_machine(first, count, rack_cursor[r]);
  };
  // Direct and rack arcs first, then X, so X's share never takes a unit a
  // rack arc's task needs.
  for (int pass = 0; pass < 2; ++pass) {
    for (const uint32_t id : waiting_) {
      const Task& task = tasks_[id];
      for (const uint32_t arc : task.arcs) {
        if (flow[arc] <= 0) continue;
        const uint32_t dst = problem_.arcs[arc].dst;
        const bool through_x = dst == kClusterAggregator;
        if (pass == 0 && !through_x) {
          if (machine_of_node[dst] >= 0) {
            placement[id] = machine_of_node[dst];
          } else if (dst >= 2 && dst < 2 + rack_count_) {
            placement[id] = take_from_rack(dst - 2);
          }
        } else if (pass == 1 && through_x) {
          if (shape_.shape != NetworkShape::kQuincy) {
            placement[id] = take_machine(
                0, static_cast<uint32_t>(machines_.size()), x_cursor);
          } else {
            while (rack_of_x_cursor < rack_count_ &&
                   via_x[rack_of_x_cursor] <= 0) {
              ++rack_of_x_cursor;
            }
            if (rack_of_x_cursor < rack_count_) {
              --via_x[rack_of_x_cursor];
              placement[id] = take_from_rack(rack_of_x_cursor);
            }
          }
        }
        break;
      }
    }
  }
  return placement;
}

RoundChanges ClusterNetwork::NextRound(const std::vector<int64_t>* last_flow) {
  // The placements of the network every algorithm just solved, before this
  // round changes it.
  const std::vector<int64_t> placement =
      options_.starts == IncrementalOptions::StartModel::kFollowOptimum
          ? OptimumPlacements(last_flow)
          : std::vector<int64_t>();
  changed_nodes_.clear();
  changed_arcs_.clear();
  RoundChanges changes;
  for (auto it = failed_.begin(); it != failed_.end();) {
    if (--it->second == 0) {
      RecoverMachine(it->first);
      changes.recovered_machine = it->first;
      it = failed_.erase(it);
    } else {
      ++it;
    }
  }
  const double fraction =
      options_.min_change + (options_.max_change - options_.min_change) *
                                static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  const auto changed = std::max<int64_t>(
      2, std::llround(fraction * static_cast<double>(live_tasks_)));
  const int64_t completions =
      std::min<int64_t>(changed / 2, static_cast<int64_t>(running_.size()));
  const int64_t arrivals = changed - changed / 2;
  for (int64_t i = 0; i < completions; ++i) {
    RemoveTask(running_[static_cast<size_t>(
        Uniform(0, static_cast<int64_t>(running_.size()) - 1))]);
    ++changes.completions;
  }
  // Last round's placements take effect: as many waiting tasks as arrive
  // start, on the machines the optimum gave them (IncrementalOptions::
  // starts), picked at random among the placed ones.
  if (options_.starts == IncrementalOptions::StartModel::kFollowOptimum) {
    std::vector<uint32_t> placed;
    for (const uint32_t id : waiting_) {
      if (placement[id] >= 0) placed.push_back(id);
    }
    for (size_t i = 0; i < placed.size() && changes.starts < arrivals; ++i) {
      const auto pick = static_cast<size_t>(Uniform(
          static_cast<int64_t>(i), static_cast<int64_t>(placed.size()) - 1));
      std::swap(placed[i], placed[pick]);
      const uint32_t id = placed[i];
      const auto machine = static_cast<uint32_t>(placement[id]);
      // A machine full of tasks the optimum moved elsewhere (the model
      // does not migrate) keeps the task waiting.
      if (!HasRoom(machine)) continue;
      StartTask(id, machine);
      ++changes.starts;
    }
  } else {
    for (int64_t i = 0; i < arrivals && !waiting_.empty(); ++i) {
      const int64_t machine = PickFreeMachine();
      if (machine < 0) break;
      StartTask(waiting_[static_cast<size_t>(
                    Uniform(0, static_cast<int64_t>(waiting_.size()) - 1))],
                static_cast<uint32_t>(machine));
      ++changes.starts;
    }
  }
  int64_t arrived = 0;
  while (arrived < arrivals) {
    const uint32_t job = AddJob();
    const int64_t size = std::min(DrawJobSize(), arrivals - arrived);
    for (int64_t i = 0; i < size; ++i) AddTask(job, -1);
    arrived += size;
  }
  changes.arrivals = static_cast<uint32_t>(arrived);
  if (UnitReal() < options_.machine_failure_probability) {
    const auto m = static_cast<uint32_t>(Uniform(0, shape_.machines - 1));
    if (!machines_[m].failed) {
      FailMachine(m);
      failed_.emplace_back(m, 3);
      changes.failed_machine = m;
    }
  }
  auto sorted_unique = [](std::vector<uint32_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  changes.changed_nodes = sorted_unique(changed_nodes_);
  changes.changed_arcs = sorted_unique(changed_arcs_);
  return changes;
}

solver::McmfProblem QuincyNetwork(ClusterShape shape) {
  shape.shape = NetworkShape::kQuincy;
  return ClusterNetwork(shape).problem();
}

solver::McmfProblem LoadSpreadingNetwork(ClusterShape shape) {
  shape.shape = NetworkShape::kLoadSpreading;
  return ClusterNetwork(shape).problem();
}

solver::McmfProblem ContendedLoadSpreadingNetwork(uint32_t machines,
                                                  double utilisation,
                                                  uint32_t new_job_tasks,
                                                  uint64_t seed) {
  return ClusterNetwork({.shape = NetworkShape::kLoadSpreading,
                         .machines = machines,
                         .utilisation = utilisation,
                         .running_fraction = 1.0,
                         .new_job_tasks = new_job_tasks,
                         .seed = seed})
      .problem();
}

}  // namespace flowsched::bench
