#pragma once

// The skeleton of the FGD paper's greedy GPU schedulers (Weng et al., ATC
// 2023; the authors' simulator scores every node, percentageOfNodesToScore
// 100): waiting tasks one at a time in task-id order; every machine the
// task fits (cluster::FitTask) is scored by Evaluate, which may also choose
// the devices; the lowest cost wins, ties to the lowest machine id (the
// Kubernetes scheduler breaks ties at random). The task is booked on a
// scratch copy of that machine so later tasks of the round see it, and the
// placement names its devices. A task that fits nowhere is left waiting.
//
// Cost per round: O(waiting x machines x Evaluate); a machine is copied
// only when a task of the round is booked on it.

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "services/baselines/baseline_scheduler.h"
#include "services/cluster/resource_fit.h"

namespace flowsched::baselines {

// A scored choice: lower cost is better.
struct NodeChoice {
  double cost = 0;
  // Empty: the devices FitTask picks.
  std::vector<cluster::DeviceShare> devices;
};

class NodeScoreScheduler : public BaselineScheduler {
 public:
  std::vector<BaselinePlacement> Schedule(
      const cluster::ClusterState& state) final;

 protected:
  // Called once per Schedule before any Evaluate.
  virtual void BeginRound(const cluster::ClusterState& state) = 0;
  // The cost of placing `task` on `machine` (which it fits: `fit` is
  // FitTask's answer). nullopt: not a candidate.
  virtual std::optional<NodeChoice> Evaluate(const cluster::Machine& machine,
                                             const cluster::Task& task,
                                             const cluster::Fit& fit) = 0;
};

// Amounts per dimension the paper's scores read: CPU millicores, memory
// bytes, device milli.
struct ResourceVector {
  double cpu_millis = 0, memory_bytes = 0, device_milli = 0;
};

// Largest capacity of any machine per dimension (the "max spec" the
// paper's scores normalise by); at least 1 each so they divide safely.
[[nodiscard]] ResourceVector ComputeMaxSpec(const cluster::ClusterState& state);

// Free capacity of a machine: CPU and memory (unreported: 0), and the free
// milli of all its devices.
[[nodiscard]] ResourceVector ComputeFree(const cluster::Machine& machine);

// A task's request: CPU, memory, and device milli (whole devices x 1000,
// or its fraction).
[[nodiscard]] ResourceVector RequestVector(const cluster::TaskSpec& task);

// `v` with each dimension divided by `max_spec`'s.
[[nodiscard]] ResourceVector Normalised(const ResourceVector& v,
                                        const ResourceVector& max_spec);

// A NodeScoreScheduler whose score normalises by the max spec, computed
// once per round.
class MaxSpecScoreScheduler : public NodeScoreScheduler {
 protected:
  void BeginRound(const cluster::ClusterState& state) override {
    max_spec_ = ComputeMaxSpec(state);
  }
  [[nodiscard]] ResourceVector NormalisedFree(
      const cluster::Machine& machine) const {
    return Normalised(ComputeFree(machine), max_spec_);
  }
  [[nodiscard]] ResourceVector NormalisedRequest(
      const cluster::TaskSpec& task) const {
    return Normalised(RequestVector(task), max_spec_);
  }
  ResourceVector max_spec_;
};

}  // namespace flowsched::baselines
