#pragma once

// The random benchmark family: static scheduling networks whose shape is
// drawn at random (size, rack size, slots, load, how much already runs,
// preference arcs per task, job-size distribution, cost range), so a
// solver's speed is judged on inputs nobody tuned it on. The same options
// give the same cases on every machine.

#include <cstdint>
#include <vector>

#include "tools/bench/solver_bench.h"

namespace flowsched::bench {

struct RandomFamilyOptions {
  uint32_t count = 50;
  uint64_t seed = 1;
  // Machines are log-uniform in [min_machines, max_machines].
  uint32_t min_machines = 1000;
  uint32_t max_machines = 50000;
};

// `count` cases of kind "random", named rand<NN>-<shape>-m<machines>-u<load>.
// Three in four are Quincy-shaped, the rest load spreading; one in five is a
// cold start (nothing running yet).
std::vector<BenchCase> RandomFamilyCases(const RandomFamilyOptions& options);

}  // namespace flowsched::bench
