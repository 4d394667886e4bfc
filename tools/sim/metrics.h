#pragma once

// The simulator's measures, kept free of I/O so they can be tested alone.

#include <cstdint>
#include <utility>
#include <vector>

#include "services/cluster/cluster_state.h"
#include "services/common/strong_id.h"

namespace flowsched::sim {

// Bytes of a task's input read on the machine it runs on, from another
// machine of its rack, and across the core (everything else: bytes of
// machines in other racks and bytes whose location is unknown).
struct LocalityBytes {
  int64_t local = 0;
  int64_t rack = 0;
  int64_t remote = 0;
  void Add(const LocalityBytes& other) {
    local += other.local;
    rack += other.rack;
    remote += other.remote;
  }
  [[nodiscard]] int64_t total() const { return local + rack + remote; }
};

// Where `task`'s input lies relative to `machine`, as cluster::LocateInput
// reads the entries: local = L_m, rack = B_l - L_m, remote = T - B_l.
LocalityBytes InputLocality(const cluster::ClusterState& state,
                            const cluster::Task& task, MachineId machine);

struct Distribution {
  uint64_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};

// Sorts `values` and summarises them (all zero when empty).
Distribution Summarise(std::vector<double>& values);
// The empirical CDF of sorted values as (value, fraction <= value), at most
// `max_points` points (evenly spaced ranks, always including the maximum).
std::vector<std::pair<double, double>> Cdf(const std::vector<double>& sorted,
                                           size_t max_points);

// Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all equal, 1/n when
// one takes everything. 1 for an empty or all-zero input.
double JainIndex(const std::vector<double>& x);

// Fairness of the current allocation: Jain's index over jobs of
// running_j / A_j, with A_j the Quincy fair share of slots
// (baselines::FairShares; jobs with A_j = 0 left out). 1 when every job
// runs exactly in proportion to its share.
double FairShareJain(const cluster::ClusterState& state);

}  // namespace flowsched::sim
