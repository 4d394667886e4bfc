#include "tools/bench/random_family.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "fmt/format.h"

namespace flowsched::bench {
namespace {

// Modulo and shifts on mt19937_64 (not std::*_distribution, which differ
// between standard libraries) keep the family identical everywhere.
class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed) {}
  int64_t Int(int64_t lo, int64_t hi) {
    return lo +
           static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1));
  }
  double Real(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  }
  double LogUniform(double lo, double hi) {
    return std::exp(Real(std::log(lo), std::log(hi)));
  }
  uint64_t Seed() { return rng_(); }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

std::vector<BenchCase> RandomFamilyCases(const RandomFamilyOptions& options) {
  Draw draw(options.seed);
  const uint32_t min_machines = std::max<uint32_t>(1, options.min_machines);
  const uint32_t max_machines = std::max(min_machines, options.max_machines);
  std::vector<BenchCase> cases;
  for (uint32_t i = 0; i < options.count; ++i) {
    BenchCase c;
    c.kind = "random";
    ClusterShape& s = c.shape;
    s.shape = draw.Int(0, 3) == 0 ? NetworkShape::kLoadSpreading
                                  : NetworkShape::kQuincy;
    s.machines = static_cast<uint32_t>(std::lround(
        draw.LogUniform(min_machines, static_cast<double>(max_machines) + 1) -
        0.5));
    s.machines = std::clamp(s.machines, min_machines, max_machines);
    s.machines_per_rack = static_cast<uint32_t>(draw.Int(10, 100));
    s.slots_per_machine = static_cast<uint32_t>(draw.Int(4, 16));
    s.utilisation = draw.Real(0.3, 1.1);
    s.running_fraction = draw.Int(0, 4) == 0 ? 0.0 : draw.Real(0.5, 1.0);
    s.mean_tasks_per_job =
        static_cast<uint32_t>(std::lround(draw.LogUniform(1, 1000)));
    s.job_sizes = static_cast<JobSizes>(draw.Int(0, 3));
    s.max_preferences = static_cast<uint32_t>(draw.Int(0, 10));
    s.min_preferences = static_cast<uint32_t>(draw.Int(0, s.max_preferences));
    s.cost_scale = std::array<int64_t, 4>{1, 10, 100, 1000}[draw.Int(0, 3)];
    s.seed = draw.Seed();
    c.name = fmt::format("rand{:02}-{}-m{}-u{}", i,
                         s.shape == NetworkShape::kQuincy ? "quincy" : "ls",
                         s.machines, std::lround(s.utilisation * 100));
    cases.push_back(c);
  }
  return cases;
}

}  // namespace flowsched::bench
