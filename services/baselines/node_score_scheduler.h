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
#include "services/cluster/resource_vector.h"

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

using cluster::ResourceVector;

// A NodeScoreScheduler whose score normalises by the max spec, computed
// once per round.
class MaxSpecScoreScheduler : public NodeScoreScheduler {
 protected:
  void BeginRound(const cluster::ClusterState& state) override {
    max_spec_ = cluster::ComputeMaxSpec(state);
  }
  [[nodiscard]] ResourceVector NormalisedFree(
      const cluster::Machine& machine) const {
    return cluster::Normalised(cluster::ComputeFree(machine), max_spec_);
  }
  [[nodiscard]] ResourceVector NormalisedRequest(
      const cluster::TaskSpec& task) const {
    return cluster::Normalised(cluster::RequestVector(task), max_spec_);
  }
  ResourceVector max_spec_;
};

}  // namespace flowsched::baselines
