#pragma once

// Seeded generators of min-cost flow problems for solver tests and
// benchmarks. Every generator is a pure function of its arguments, so a
// failing seed reproduces exactly.

#include <cstdint>

#include "services/solver/mcmf_problem.h"

namespace flowsched::solver::testgen {

struct RandomNetworkOptions {
  uint32_t node_count = 20;
  uint32_t arc_count = 60;
  int64_t max_capacity = 20;
  int64_t min_cost = -10;  // negative values produce negative-cost arcs
  int64_t max_cost = 50;
  double zero_capacity_fraction = 0.05;
  double parallel_arc_fraction = 0.1;  // copy endpoints of an earlier arc
  double self_loop_fraction = 0.02;
};

// Feasible by construction: supplies are the net outflow of a random flow
// that respects the capacities.
McmfProblem RandomFeasibleNetwork(uint64_t seed,
                                  const RandomNetworkOptions& options);

// Supplies drawn independently of the arcs (|supply| <= max_supply, summing
// to zero), so many of these problems are infeasible.
McmfProblem RandomSupplyNetwork(uint64_t seed,
                                const RandomNetworkOptions& options,
                                int64_t max_supply);

// A Quincy-style scheduling network. Node layout, in index order:
//   tasks (supply 1 each), one unscheduled aggregator per job, the cluster
//   aggregator X, rack aggregators, machines, and the sink (supply -tasks).
// Arcs: task -> its job's aggregator -> sink; task -> X -> rack -> machine
// -> sink with slot capacities; and per task up to max_preferences direct
// arcs to machines or racks.
struct SchedulingOptions {
  uint32_t task_count = 100;
  uint32_t job_count = 5;
  uint32_t machine_count = 20;
  uint32_t rack_count = 4;
  double utilisation = 0.8;  // tasks / total slots
  uint32_t max_preferences = 3;
  // If below 1, each job aggregator -> sink arc carries only this fraction
  // of the job's tasks (rounded down), which makes the network infeasible
  // whenever too few slots are left for the rest.
  double unscheduled_fraction = 1.0;
};

McmfProblem SchedulingNetwork(uint64_t seed, const SchedulingOptions& options);

// A long chain: arcs v -> v + 1 that can carry every unit, forward
// shortcuts of up to max_hop nodes with small capacities and costs that
// may undercut the chain, and (with back_arcs) arcs a few nodes back, so
// cycles appear. Supplies sit in the first tenth of the chain and demands
// in the last, so the problem is feasible and its paths are most of the
// chain long (hundreds to thousands of arcs): the shape that made
// per-node passes quadratic.
struct ChainOptions {
  uint32_t node_count = 1000;
  uint32_t shortcuts = 500;
  uint32_t max_hop = 50;
  uint32_t endpoints = 5;  // supply nodes, and as many demand nodes
  bool back_arcs = false;
};
McmfProblem ChainNetwork(uint64_t seed, const ChainOptions& options);

// A starting point for warm-started solvers: the optimum (by cost scaling)
// of a copy of `problem` with the costs of about a fifth of the arcs and
// the capacities of about a tenth changed, as a round's changes would; if
// that copy is infeasible, a random flow and random potentials instead.
// Sized to `problem`.
struct WarmStartPoint {
  std::vector<int64_t> flow;
  std::vector<int64_t> potentials;
};
WarmStartPoint PerturbedOptimum(const McmfProblem& problem, uint64_t seed);

}  // namespace flowsched::solver::testgen
