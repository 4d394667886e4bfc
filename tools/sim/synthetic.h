#pragma once

// A synthetic workload shaped like the Google 2011 trace at steady state
// (Firmament OSDI 2016 section 7; Reiss et al., SoCC 2012): 12,500
// machines in racks of 40, about 150,000 running tasks in about 1,800
// jobs, heavy-tailed (lognormal) job sizes, a few long-running service
// jobs holding most of the running tasks and a stream of short batch jobs.
//
// At time 0 the cluster already holds the steady-state population
// (`utilisation` of the slots, each task with the remaining part of a
// runtime drawn from its class); then jobs arrive as a Poisson process at
// the rate that keeps the population steady (Little's law: rate = running
// tasks / mean runtime). Deterministic for a seed.

#include <cstdint>

#include "tools/sim/workload.h"

namespace flowsched::sim {

inline constexpr uint32_t kDefaultInputReplicas = 3;
inline constexpr uint32_t kMaxInputReplicas = 10;

struct SyntheticSpec {
  uint64_t machines = 12'500;
  uint64_t machines_per_rack = 40;
  // Slots per machine the utilisation refers to (the slot model's slots).
  uint32_t slots_per_machine = 13;
  double utilisation = 0.9;
  int64_t duration_us = 600'000'000;  // arrivals up to this time
  // Jobs: lognormal size (median e^mu), clipped to [1, max_job_size],
  // max_job_size scaled down with machines below 12,500 (at least 100).
  double job_size_mu = 3.26;  // median 26 tasks, mean ~80
  double job_size_sigma = 1.5;
  uint64_t max_job_size = 5'000;
  // Of arriving jobs, the fraction that are services.
  double service_job_fraction = 0.2;
  // Runtimes: lognormal with these medians (seconds) and sigmas.
  double service_median_s = 6 * 3600.0;
  double service_sigma = 1.0;
  double batch_median_s = 300.0;
  double batch_sigma = 1.2;
  uint32_t input_replicas = kDefaultInputReplicas;  // AssignInputBlocks
  uint64_t seed = 1;
};

// Where a task's input lives, HDFS-like: 1-6 blocks of 256 MiB, each
// written on a machine of the job's home rack with probability 0.8, else
// anywhere, and replicated as HDFS's default placement does (and as the
// Firmament simulator assumes, Hapi thesis section 4: 3 replicas): the
// second copy in another rack, the third on another machine of that rack,
// any further ones (or one with no such rack or machine) anywhere. With 3
// copies, more than one rack and racks of two or more machines, a block is
// in two racks. With replicas above 1 each machine entry names its rack and
// each task lists, per rack, the bytes the rack holds (each block once;
// cluster::LocateInput). The copies draw from a random stream of their
// own: the primaries, home racks and block counts are those of one copy.
// Used for synthetic workloads and traces alike (the trace has no data),
// so data locality is measurable. `replicas` is clamped to
// [1, min(kMaxInputReplicas, distinct machines)]; with 1 the workload is
// the one this generator made before replication (a test pins it).
void AssignInputBlocks(Workload& workload, uint64_t seed, uint32_t replicas);

// Machines, the initial population and the arrivals (with input blocks).
Workload GenerateSynthetic(const SyntheticSpec& spec);

}  // namespace flowsched::sim
