#pragma once

// "random": a task goes to a machine drawn uniformly among those it fits
// (the FGD paper's Random-fit baseline), devices as FitTask picks them.
// Each fitting machine gets an independent uniform draw from a
// std::mt19937_64 seeded at construction and the least draw wins, so the
// choice is uniform and the sequence deterministic per seed.

#include <cstdint>
#include <random>
#include <string_view>

#include "services/baselines/node_score_scheduler.h"

namespace flowsched::baselines {

class RandomFitScheduler final : public NodeScoreScheduler {
 public:
  explicit RandomFitScheduler(uint64_t seed) : rng_(seed) {}
  [[nodiscard]] std::string_view name() const override { return "random"; }

 protected:
  void BeginRound(const cluster::ClusterState&) override {}
  std::optional<NodeChoice> Evaluate(const cluster::Machine& machine,
                                     const cluster::Task& task,
                                     const cluster::Fit& fit) override;

 private:
  std::mt19937_64 rng_;
};

}  // namespace flowsched::baselines
