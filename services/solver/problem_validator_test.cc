#include "services/solver/problem_validator.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"

namespace flowsched::solver {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

// Two nodes, one arc 0 -> 1 carrying 3 units.
McmfProblem ValidProblem() {
  McmfProblem problem;
  problem.node_count = 2;
  problem.supply = {3, -3};
  problem.arcs = {{.src = 0, .dst = 1, .capacity = 5, .cost = 7}};
  return problem;
}

TEST(ValidateProblemTest, AcceptsValidProblem) {
  EXPECT_THAT(ValidateProblem(ValidProblem()), IsOk());
}

TEST(ValidateProblemTest, AcceptsEmptyProblem) {
  EXPECT_THAT(ValidateProblem(McmfProblem{}), IsOk());
}

TEST(ValidateProblemTest, AcceptsExtremeButLegalValues) {
  McmfProblem problem = ValidProblem();
  problem.supply = {kMaxNodeSupply, -kMaxNodeSupply};
  problem.arcs[0].capacity = kMaxArcCapacity;
  problem.arcs[0].cost = -kMaxArcCost;
  EXPECT_THAT(ValidateProblem(problem), IsOk());
}

TEST(ValidateProblemTest, RejectsSupplySizeMismatch) {
  McmfProblem problem = ValidProblem();
  problem.supply.push_back(0);
  EXPECT_THAT(ValidateProblem(problem),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "supply has 3 entries but node_count is 2"));
}

TEST(ValidateProblemTest, RejectsSrcOutOfRange) {
  McmfProblem problem = ValidProblem();
  problem.arcs.push_back({.src = 2, .dst = 0, .capacity = 1, .cost = 0});
  EXPECT_THAT(ValidateProblem(problem),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "arc 1 has src 2 but node_count is 2"));
}

TEST(ValidateProblemTest, RejectsDstOutOfRange) {
  McmfProblem problem = ValidProblem();
  problem.arcs[0].dst = 9;
  EXPECT_THAT(ValidateProblem(problem),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "arc 0 has dst 9 but node_count is 2"));
}

TEST(ValidateProblemTest, RejectsNegativeCapacity) {
  McmfProblem problem = ValidProblem();
  problem.arcs[0].capacity = -1;
  EXPECT_THAT(ValidateProblem(problem),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "arc 0 has capacity -1 outside"));
}

TEST(ValidateProblemTest, RejectsCapacityAboveLimit) {
  McmfProblem problem = ValidProblem();
  problem.arcs[0].capacity = kMaxArcCapacity + 1;
  EXPECT_THAT(ValidateProblem(problem),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "arc 0 has capacity 1099511627777 outside"));
}

TEST(ValidateProblemTest, RejectsCostAboveLimit) {
  McmfProblem problem = ValidProblem();
  problem.arcs[0].cost = kMaxArcCost + 1;
  EXPECT_THAT(ValidateProblem(problem),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "arc 0 has cost 1073741825 outside"));
}

TEST(ValidateProblemTest, RejectsCostBelowLimit) {
  McmfProblem problem = ValidProblem();
  problem.arcs[0].cost = -kMaxArcCost - 1;
  EXPECT_THAT(ValidateProblem(problem),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "arc 0 has cost -1073741825 outside"));
}

TEST(ValidateProblemTest, RejectsUnbalancedSupplies) {
  McmfProblem problem = ValidProblem();
  problem.supply = {3, -2};
  EXPECT_THAT(ValidateProblem(problem),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "supplies sum to 1 instead of 0"));
}

TEST(ValidateProblemTest, RejectsSupplyAboveLimit) {
  McmfProblem problem = ValidProblem();
  problem.supply = {-kMaxNodeSupply - 1, kMaxNodeSupply + 1};
  EXPECT_THAT(ValidateProblem(problem),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "node 0 has supply -1099511627777 outside"));
}

TEST(ValidateProblemTest, InlineBoundsAgreeWithValidateArc) {
  // Every combination of in-range, boundary and out-of-range values.
  const uint32_t nodes = 3;
  const std::vector<uint32_t> ends = {0, nodes - 1, nodes, 4'000'000'000U};
  const std::vector<int64_t> capacities = {-1, 0, 5, kMaxArcCapacity,
                                           kMaxArcCapacity + 1};
  const std::vector<int64_t> costs = {-kMaxArcCost - 1, -kMaxArcCost, 0,
                                      kMaxArcCost, kMaxArcCost + 1};
  int accepted = 0;
  for (uint32_t src : ends) {
    for (uint32_t dst : ends) {
      for (int64_t capacity : capacities) {
        for (int64_t cost : costs) {
          const McmfArc arc{src, dst, capacity, cost};
          const bool valid = ValidateArc(arc, 0, nodes).ok();
          EXPECT_EQ(ArcWithinBounds(arc, nodes), valid)
              << src << " " << dst << " " << capacity << " " << cost;
          accepted += valid ? 1 : 0;
        }
      }
    }
  }
  EXPECT_EQ(accepted, 2 * 2 * 3 * 3);
  // ValidateArcs names the first rejected arc.
  const std::vector<McmfArc> arcs = {{0, 1, 1, 0}, {0, 1, -1, 0}, {0, 5, 1, 0}};
  EXPECT_THAT(
      ValidateArcs(arcs, nodes),
      StatusIs(absl::StatusCode::kInvalidArgument, "arc 1 has capacity -1"));
  EXPECT_THAT(ValidateArcs({arcs[0]}, nodes), IsOk());
}

}  // namespace
}  // namespace flowsched::solver
