#include "tools/sim/gpu_replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>
#include <ostream>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "fmt/format.h"
#include "services/baselines/baseline_scheduler.h"
#include "services/cluster/cluster_state.h"
#include "services/cluster/resource_fit.h"
#include "tools/sim/contender.h"

namespace flowsched::sim {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int64_t RequestedMilli(const cluster::TaskSpec& spec) {
  return spec.accelerator.total_milli();
}

absl::StatusOr<std::unique_ptr<Contender>> MakeReplayContender(
    const std::string& scheduler, const GpuReplayOptions& options,
    const cluster::TargetWorkload& target) {
  if (scheduler.rfind("flow:", 0) == 0) {
    return MakeContender(scheduler, options.solver);
  }
  auto baseline = baselines::MakeBaseline(
      scheduler, {.seed = options.seed, .target_workload = target});
  if (!baseline.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(baseline.status().message(), "; or flow:<policy>"));
  }
  return MakeBaselineContender(std::move(*baseline));
}

// Idle and held device milli of the whole state.
int64_t HeldMilli(const cluster::ClusterState& state) {
  int64_t held = 0;
  for (const auto& [id, machine] : state.machines()) {
    for (const cluster::Device& device : machine.devices) {
      held += device.used_milli;
    }
  }
  return held;
}

// The hard check after a run: no machine over capacity, no device over its
// milli, and the devices hold exactly what the running pods asked.
absl::Status CheckFinalState(const cluster::ClusterState& state) {
  for (const auto& [id, machine] : state.machines()) {
    if (!cluster::WithinCapacity(machine)) {
      return absl::InternalError(
          absl::StrCat("machine ", id.value(), " is over capacity"));
    }
    for (size_t i = 0; i < machine.devices.size(); ++i) {
      const cluster::Device& device = machine.devices[i];
      if (device.used_milli > device.capacity_milli || device.used_milli < 0) {
        return absl::InternalError(absl::StrCat(
            "machine ", id.value(), " device ", i, " holds ", device.used_milli,
            " of ", device.capacity_milli, " milli"));
      }
    }
  }
  int64_t asked = 0;
  for (const auto& [id, task] : state.tasks()) {
    if (task.running()) asked += RequestedMilli(task.spec);
  }
  if (const int64_t held = HeldMilli(state); held != asked) {
    return absl::InternalError(absl::StrCat(
        "devices hold ", held, " milli, running pods asked ", asked));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t RequestedMilli(const OpenbPod& pod) {
  return static_cast<int64_t>(pod.num_gpu) * pod.gpu_milli;
}

double GpuReplayResult::UnallocatedAt(double arrived) const {
  for (const GpuReplayPoint& point : curve) {
    if (point.arrived >= arrived - 1e-12) return 1.0 - point.allocated;
  }
  return std::nan("");
}

std::vector<size_t> ReplayOrder(const std::vector<OpenbPod>& pods,
                                int64_t capacity_milli, uint64_t seed,
                                double inflate) {
  std::vector<size_t> by_name(pods.size());
  std::iota(by_name.begin(), by_name.end(), size_t{0});
  std::sort(by_name.begin(), by_name.end(),
            [&](size_t a, size_t b) { return pods[a].name < pods[b].name; });
  std::vector<size_t> order = by_name;
  if (pods.empty()) return order;
  std::mt19937_64 rng(seed);
  int64_t total = 0;
  bool any_gpu = false;
  for (const OpenbPod& pod : pods) {
    total += RequestedMilli(pod);
    any_gpu = any_gpu || RequestedMilli(pod) > 0;
  }
  const double target = inflate * static_cast<double>(capacity_milli);
  if (any_gpu && static_cast<double>(total) < target) {
    std::uniform_int_distribution<size_t> draw(0, pods.size() - 1);
    while (static_cast<double>(total) < target) {
      const size_t pod = by_name[draw(rng)];
      order.push_back(pod);
      total += RequestedMilli(pods[pod]);
    }
  } else {
    while (!order.empty() && static_cast<double>(total) > target) {
      const size_t k =
          std::uniform_int_distribution<size_t>(0, order.size() - 1)(rng);
      total -= RequestedMilli(pods[order[k]]);
      // The order is shuffled next: swap-and-pop keeps this linear.
      order[k] = order.back();
      order.pop_back();
    }
  }
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

absl::StatusOr<GpuReplayResult> RunGpuReplay(
    const std::vector<OpenbNode>& nodes, const std::vector<OpenbPod>& pods,
    const std::string& scheduler, const GpuReplayOptions& options) {
  if (options.batch == 0) {
    return absl::InvalidArgumentError("batch must be at least 1");
  }
  if (pods.empty()) {
    return absl::InvalidArgumentError("the pod list has no pods");
  }
  GpuReplayResult result{
      .scheduler = scheduler, .seed = options.seed, .batch = options.batch};
  for (const OpenbNode& node : nodes) {
    result.capacity_milli +=
        static_cast<int64_t>(node.gpus) * cluster::kMilliPerDevice;
  }
  if (result.capacity_milli == 0) {
    return absl::InvalidArgumentError("the node list has no GPU");
  }
  const double capacity = static_cast<double>(result.capacity_milli);

  std::vector<cluster::TaskSpec> trace_specs;
  trace_specs.reserve(pods.size());
  for (size_t i = 0; i < pods.size(); ++i) {
    trace_specs.push_back(ToTaskSpec(pods[i], TaskId(i + 1)));
  }
  const cluster::TargetWorkload target =
      cluster::TargetWorkload::Build(trace_specs, options.coverage);
  auto contender = MakeReplayContender(scheduler, options, target);
  if (!contender.ok()) return contender.status();
  const bool flow = scheduler.rfind("flow:", 0) == 0;

  cluster::ClusterState state;
  cluster::ChangeSet changes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (auto s = state.Apply(
            {"", 0, "openb", ToMachineAdded(nodes[i], MachineId(i + 1))}, 0,
            changes);
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("node ", nodes[i].name, ": ", s.message()));
    }
  }

  const std::vector<size_t> order =
      ReplayOrder(pods, result.capacity_milli, options.seed, options.inflate);
  result.pods = order.size();
  const auto start = Clock::now();
  auto last_progress = start;
  int64_t arrived_milli = 0;
  uint64_t round = 0;
  for (size_t begin = 0; begin < order.size(); begin += options.batch) {
    ++round;
    const int64_t now_us = static_cast<int64_t>(round) * 1'000'000;
    const size_t end = std::min(order.size(), begin + options.batch);
    for (size_t j = begin; j < end; ++j) {
      const OpenbPod& pod = pods[order[j]];
      arrived_milli += RequestedMilli(pod);
      cluster::JobSubmitted submitted{.job = JobId(j + 1), .name = pod.name};
      submitted.tasks.push_back(ToTaskSpec(pod, TaskId(j + 1)));
      if (auto s = state.Apply({"", now_us, "openb", std::move(submitted)},
                               now_us, changes);
          !s.ok()) {
        return absl::InternalError(
            absl::StrCat("submitting ", pod.name, ": ", s.message()));
      }
    }
    auto decided = (*contender)->Decide(state, changes, now_us);
    if (!decided.ok()) {
      return absl::InternalError(absl::StrCat(scheduler, " round ", round, ": ",
                                              decided.status().message()));
    }
    changes = {};
    result.decide_ms.push_back(decided->total_ms());
    result.solve_ms.push_back(decided->solve_ms);
    const AppliedDecisions applied =
        ApplyDecisions(*decided, state, now_us, changes);
    result.placed += applied.placed.size();
    if (!flow) {
      // A baseline's pod left unplaced stays failed.
      for (size_t j = begin; j < end; ++j) {
        const cluster::Task* task = state.FindTask(TaskId(j + 1));
        if (task == nullptr || task->running()) continue;
        ++result.unplaced;
        if (auto s =
                state.Apply({"", now_us, "openb",
                             cluster::TaskKilled{JobId(j + 1), TaskId(j + 1)}},
                            now_us, changes);
            !s.ok()) {
          return absl::InternalError(s.message());
        }
      }
    }
    const GpuReplayPoint point{
        .arrived = static_cast<double>(arrived_milli) / capacity,
        .allocated = static_cast<double>(HeldMilli(state)) / capacity};
    result.curve.push_back(point);
    if (!result.fragmentation.has_value() &&
        point.arrived >= options.fragmentation_at) {
      result.fragmentation =
          cluster::MeasureFragmentation(state.machines(), target);
    }
    if (options.progress != nullptr &&
        std::chrono::duration<double>(Clock::now() - last_progress).count() >=
            options.progress_every_s) {
      last_progress = Clock::now();
      *options.progress << fmt::format(
          "gpu-replay {} seed {} batch {}: {}/{} pods, arrived {:.1f}%, "
          "allocated {:.1f}%, {:.0f} s\n",
          scheduler, options.seed, options.batch, end, order.size(),
          100 * point.arrived, 100 * point.allocated, SecondsSince(start));
    }
  }
  result.wall_s = SecondsSince(start);
  if (flow) result.unplaced = state.waiting_task_count();
  if (auto s = CheckFinalState(state); !s.ok()) {
    return absl::InternalError(
        absl::StrCat(scheduler, " seed ", options.seed, ": ", s.message()));
  }
  return result;
}

}  // namespace flowsched::sim
