#include "tools/bench/random_family.h"

#include <set>
#include <string>

#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/solver/flow_checker.h"
#include "services/solver/lemon_reference.h"
#include "services/solver/portfolio.h"
#include "services/solver/problem_validator.h"

namespace flowsched::bench {
namespace {

using ::flowsched::testing::IsOk;

TEST(RandomFamilyTest, SameSeedSameCasesOtherSeedOthers) {
  const std::vector<BenchCase> a = RandomFamilyCases({.count = 20, .seed = 4});
  const std::vector<BenchCase> b = RandomFamilyCases({.count = 20, .seed = 4});
  const std::vector<BenchCase> c = RandomFamilyCases({.count = 20, .seed = 5});
  ASSERT_EQ(a.size(), 20u);
  std::set<std::string> names_a;
  std::set<std::string> names_c;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].shape.seed, b[i].shape.seed);
    names_a.insert(a[i].name);
    names_c.insert(c[i].name);
  }
  EXPECT_EQ(names_a.size(), 20u);  // names are unique
  EXPECT_NE(names_a, names_c);
}

// Every draw stays inside the documented ranges, and over many cases each
// dimension takes more than one value.
TEST(RandomFamilyTest, ShapesCoverTheirRanges) {
  const std::vector<BenchCase> cases = RandomFamilyCases(
      {.count = 400, .seed = 1, .min_machines = 1000, .max_machines = 50000});
  std::set<NetworkShape> shapes;
  std::set<JobSizes> sizes;
  std::set<int64_t> scales;
  size_t cold = 0;
  uint32_t smallest = UINT32_MAX;
  uint32_t largest = 0;
  for (const BenchCase& c : cases) {
    const ClusterShape& s = c.shape;
    EXPECT_EQ(c.kind, "random");
    EXPECT_EQ(c.rounds, 0u);
    EXPECT_GE(s.machines, 1000u);
    EXPECT_LE(s.machines, 50000u);
    EXPECT_GE(s.machines_per_rack, 10u);
    EXPECT_LE(s.machines_per_rack, 100u);
    EXPECT_GE(s.utilisation, 0.3);
    EXPECT_LE(s.utilisation, 1.1);
    EXPECT_LE(s.min_preferences, s.max_preferences);
    EXPECT_LE(s.max_preferences, 10u);
    EXPECT_GE(s.mean_tasks_per_job, 1u);
    EXPECT_LE(s.mean_tasks_per_job, 1000u);
    shapes.insert(s.shape);
    sizes.insert(s.job_sizes);
    scales.insert(s.cost_scale);
    cold += s.running_fraction == 0;
    smallest = std::min(smallest, s.machines);
    largest = std::max(largest, s.machines);
  }
  EXPECT_EQ(shapes.size(), 2u);
  EXPECT_EQ(sizes.size(), 4u);
  EXPECT_EQ(scales.size(), 4u);
  EXPECT_GT(cold, 40u);
  EXPECT_LT(cold, 120u);
  EXPECT_LT(smallest, 1500u);  // log-uniform: the small end is well drawn
  EXPECT_GT(largest, 35000u);
}

// Small members of the family are valid networks that the product's
// from-scratch solver solves with LEMON's optimal cost, certified.
TEST(RandomFamilyTest, SmallNetworksSolveLikeLemon) {
  for (const BenchCase& c : RandomFamilyCases(
           {.count = 12, .seed = 7, .min_machines = 5, .max_machines = 60})) {
    SCOPED_TRACE(c.name);
    const solver::McmfProblem problem = ClusterNetwork(c.shape).problem();
    ASSERT_THAT(solver::ValidateProblem(problem), IsOk());
    const absl::StatusOr<solver::McmfSolution> solution =
        solver::Portfolio().Solve(problem);
    ASSERT_THAT(solution, IsOk());
    EXPECT_THAT(solver::CheckOptimalFlow(problem, *solution), IsOk());
    const solver::testgen::LemonResult lemon =
        solver::testgen::SolveWithLemon(problem);
    EXPECT_EQ(solution->outcome, lemon.outcome);
    EXPECT_EQ(solution->total_cost, lemon.total_cost);
  }
}

}  // namespace
}  // namespace flowsched::bench
