#include "services/solver/dimacs.h"

#include <lemon/network_simplex.h>
#include <lemon/smart_graph.h>

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/solver/flow_checker.h"
#include "services/solver/successive_shortest_path.h"
#include "services/solver/test_graphs.h"

namespace flowsched::solver {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<DimacsProblem> ParseText(const std::string& text) {
  std::istringstream in(text);
  return ParseDimacs(in);
}

void ExpectSameProblem(const McmfProblem& a, const McmfProblem& b) {
  ASSERT_EQ(a.node_count, b.node_count);
  EXPECT_EQ(a.supply, b.supply);
  ASSERT_EQ(a.arcs.size(), b.arcs.size());
  for (size_t i = 0; i < a.arcs.size(); ++i) {
    EXPECT_EQ(a.arcs[i].src, b.arcs[i].src) << "arc " << i;
    EXPECT_EQ(a.arcs[i].dst, b.arcs[i].dst) << "arc " << i;
    EXPECT_EQ(a.arcs[i].capacity, b.arcs[i].capacity) << "arc " << i;
    EXPECT_EQ(a.arcs[i].cost, b.arcs[i].cost) << "arc " << i;
  }
}

TEST(DimacsTest, ParsesCommentsSuppliesAndArcs) {
  const absl::StatusOr<DimacsProblem> parsed = ParseText(
      "c a tiny instance\n"
      "\n"
      "p min 3 2\r\n"
      "n 1 4\n"
      "n 3 -4\n"
      "c comments may appear anywhere\n"
      "a 1 2 0 5 3\n"
      "a\t2 3 0 4 -1\n");
  ASSERT_THAT(parsed, IsOk());
  EXPECT_EQ(parsed->problem.node_count, 3u);
  EXPECT_THAT(parsed->problem.supply, ElementsAre(4, 0, -4));
  ASSERT_EQ(parsed->problem.arcs.size(), 2u);
  EXPECT_EQ(parsed->problem.arcs[1].src, 1u);
  EXPECT_EQ(parsed->problem.arcs[1].dst, 2u);
  EXPECT_EQ(parsed->problem.arcs[1].capacity, 4);
  EXPECT_EQ(parsed->problem.arcs[1].cost, -1);
  EXPECT_EQ(parsed->cost_offset, 0);
  EXPECT_THAT(parsed->lower, ElementsAre(0, 0));
}

TEST(DimacsTest, LowerBoundsAreTransformed) {
  const absl::StatusOr<DimacsProblem> parsed = ParseText(
      "p min 2 1\n"
      "n 1 5\n"
      "n 2 -5\n"
      "a 1 2 2 7 3\n");
  ASSERT_THAT(parsed, IsOk());
  EXPECT_THAT(parsed->problem.supply, ElementsAre(3, -3));
  EXPECT_EQ(parsed->problem.arcs[0].capacity, 5);
  EXPECT_EQ(parsed->cost_offset, 6);
  const absl::StatusOr<McmfSolution> solution =
      SuccessiveShortestPath().Solve(parsed->problem);
  ASSERT_THAT(solution, IsOk());
  const absl::StatusOr<int64_t> cost = OriginalCost(*parsed, *solution);
  ASSERT_THAT(cost, IsOk());
  EXPECT_EQ(*cost, 15);
  EXPECT_THAT(OriginalFlow(*parsed, *solution), ElementsAre(5));
}

TEST(DimacsTest, WriteParseRoundTrip) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const McmfProblem problem = testgen::RandomFeasibleNetwork(
        seed, {.node_count = 30, .arc_count = 120});
    std::ostringstream out;
    ASSERT_THAT(
        WriteDimacs(problem, out,
                    "seed " + std::to_string(seed) + "\nsecond comment line"),
        IsOk());
    EXPECT_THAT(out.str(), HasSubstr("c second comment line\n"));
    const absl::StatusOr<DimacsProblem> parsed = ParseText(out.str());
    ASSERT_THAT(parsed, IsOk()) << "seed " << seed;
    ExpectSameProblem(problem, parsed->problem);
    EXPECT_EQ(parsed->cost_offset, 0);
  }
  // A scheduling network too, with its negative and large costs.
  const McmfProblem scheduling = testgen::SchedulingNetwork(7, {});
  std::ostringstream out;
  ASSERT_THAT(WriteDimacs(scheduling, out, ""), IsOk());
  const absl::StatusOr<DimacsProblem> parsed = ParseText(out.str());
  ASSERT_THAT(parsed, IsOk());
  ExpectSameProblem(scheduling, parsed->problem);
}

TEST(DimacsTest, WriteRejectsInvalidProblem) {
  McmfProblem problem;
  problem.node_count = 1;
  problem.supply = {1};
  std::ostringstream out;
  EXPECT_THAT(WriteDimacs(problem, out, ""),
              StatusIs(absl::StatusCode::kInvalidArgument, "supplies"));
}

struct LowerBoundInstance {
  std::string text;
  uint32_t node_count = 0;
  std::vector<int64_t> supply;
  std::vector<McmfArc> arcs;  // capacity = original upper bound
  std::vector<int64_t> lower;
};

// Feasible by construction: supplies are the balance of a random flow that
// lies between the lower bounds and the capacities.
LowerBoundInstance RandomLowerBoundInstance(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&rng](int64_t lo, int64_t hi) {
    return lo +
           static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  LowerBoundInstance instance;
  instance.node_count = static_cast<uint32_t>(uniform(2, 25));
  instance.supply.assign(instance.node_count, 0);
  const int64_t arc_count = uniform(1, 80);
  for (int64_t i = 0; i < arc_count; ++i) {
    McmfArc arc{
        .src = static_cast<uint32_t>(uniform(0, instance.node_count - 1)),
        .dst = static_cast<uint32_t>(uniform(0, instance.node_count - 1)),
        .capacity = uniform(0, 30),
        .cost = uniform(-20, 60)};
    const int64_t flow = uniform(0, arc.capacity);
    const int64_t low = uniform(0, 3) == 0 ? 0 : uniform(0, flow);
    instance.supply[arc.src] += flow;
    instance.supply[arc.dst] -= flow;
    instance.arcs.push_back(arc);
    instance.lower.push_back(low);
  }
  std::ostringstream out;
  out << "c lower bound instance " << seed << "\n";
  out << "p min " << instance.node_count << ' ' << instance.arcs.size() << "\n";
  for (uint32_t v = 0; v < instance.node_count; ++v) {
    if (instance.supply[v] != 0)
      out << "n " << v + 1 << ' ' << instance.supply[v] << "\n";
  }
  for (size_t i = 0; i < instance.arcs.size(); ++i) {
    const McmfArc& arc = instance.arcs[i];
    out << "a " << arc.src + 1 << ' ' << arc.dst + 1 << ' ' << instance.lower[i]
        << ' ' << arc.capacity << ' ' << arc.cost << "\n";
  }
  instance.text = out.str();
  return instance;
}

// LEMON solves the original instance with its own lower-bound support, so
// the comparison also checks our transformation.
int64_t LemonCostWithLowerBounds(const LowerBoundInstance& instance) {
  lemon::SmartDigraph graph;
  std::vector<lemon::SmartDigraph::Node> nodes;
  for (uint32_t v = 0; v < instance.node_count; ++v)
    nodes.push_back(graph.addNode());
  lemon::SmartDigraph::NodeMap<int64_t> supply(graph);
  for (uint32_t v = 0; v < instance.node_count; ++v)
    supply[nodes[v]] = instance.supply[v];
  lemon::SmartDigraph::ArcMap<int64_t> lower(graph), upper(graph), cost(graph);
  for (size_t i = 0; i < instance.arcs.size(); ++i) {
    const McmfArc& arc = instance.arcs[i];
    const auto a = graph.addArc(nodes[arc.src], nodes[arc.dst]);
    lower[a] = instance.lower[i];
    upper[a] = arc.capacity;
    cost[a] = arc.cost;
  }
  lemon::NetworkSimplex<lemon::SmartDigraph, int64_t, int64_t> simplex(graph);
  simplex.supplyMap(supply).lowerMap(lower).upperMap(upper).costMap(cost);
  EXPECT_EQ(simplex.run(), simplex.OPTIMAL);
  return simplex.totalCost<int64_t>();
}

TEST(DimacsTest, LowerBoundCostMatchesLemon) {
  int with_offset = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const LowerBoundInstance instance = RandomLowerBoundInstance(seed);
    const absl::StatusOr<DimacsProblem> parsed = ParseText(instance.text);
    ASSERT_THAT(parsed, IsOk()) << "seed " << seed;
    if (parsed->cost_offset != 0) ++with_offset;
    const absl::StatusOr<McmfSolution> solution =
        SuccessiveShortestPath().Solve(parsed->problem);
    ASSERT_THAT(solution, IsOk());
    ASSERT_EQ(solution->outcome, McmfOutcome::kOptimal) << "seed " << seed;
    ASSERT_THAT(CheckOptimalFlow(parsed->problem, *solution), IsOk());
    const absl::StatusOr<int64_t> cost = OriginalCost(*parsed, *solution);
    ASSERT_THAT(cost, IsOk());
    EXPECT_EQ(*cost, LemonCostWithLowerBounds(instance)) << "seed " << seed;
    // The original flows respect the original bounds and supplies.
    const std::vector<int64_t> flow = OriginalFlow(*parsed, *solution);
    std::vector<int64_t> balance(instance.node_count, 0);
    int64_t recomputed = 0;
    for (size_t i = 0; i < flow.size(); ++i) {
      EXPECT_GE(flow[i], instance.lower[i]);
      EXPECT_LE(flow[i], instance.arcs[i].capacity);
      balance[instance.arcs[i].src] += flow[i];
      balance[instance.arcs[i].dst] -= flow[i];
      recomputed += flow[i] * instance.arcs[i].cost;
    }
    EXPECT_EQ(balance, instance.supply) << "seed " << seed;
    EXPECT_EQ(recomputed, *cost);
  }
  EXPECT_GT(with_offset, 100);
}

struct MalformedCase {
  std::string name;
  std::string text;
  std::string error;  // expected substring, including "line N: "
};

// Keeps gtest from printing the parameter as raw bytes.
void PrintTo(const MalformedCase& c, std::ostream* os) { *os << c.name; }

class DimacsMalformedTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(DimacsMalformedTest, GivesLineAndReason) {
  const absl::StatusOr<DimacsProblem> parsed = ParseText(GetParam().text);
  EXPECT_THAT(parsed,
              StatusIs(absl::StatusCode::kInvalidArgument, GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(
    All, DimacsMalformedTest,
    ::testing::Values(
        MalformedCase{"Empty", "", "line 1: missing p line"},
        MalformedCase{"OnlyComments", "c x\nc y\n", "line 2: missing p line"},
        MalformedCase{"DuplicateP", "p min 2 0\np min 2 0\n",
                      "line 2: duplicate p line (first on line 1)"},
        MalformedCase{"NotMin", "p max 2 0\n",
                      "line 1: problem type 'max' is not supported"},
        MalformedCase{"PFieldCount", "p min 2\n",
                      "line 1: p line needs 3 fields"},
        MalformedCase{"PNonNumeric", "p min two 0\n",
                      "line 1: node count 'two' is not an integer"},
        MalformedCase{"PNegativeNodes", "p min -1 0\n",
                      "line 1: node count -1 is outside"},
        MalformedCase{"PHugeNodes", "p min 4000000000 0\n",
                      "line 1: node count 4000000000 is outside"},
        MalformedCase{"ArcBeforeP", "c x\na 1 2 0 1 1\n",
                      "line 2: a line before the p line"},
        MalformedCase{"NodeBeforeP", "n 1 1\n",
                      "line 1: n line before the p line"},
        MalformedCase{"NodeAfterArc", "p min 2 1\na 1 2 0 1 1\nn 1 0\n",
                      "line 3: n line after the first a line"},
        MalformedCase{"NodeIdHigh", "p min 2 0\nn 3 1\n",
                      "line 2: node id 3 is out of range [1, 2]"},
        MalformedCase{"NodeIdZero", "p min 2 0\nn 0 1\n",
                      "line 2: node id 0 is out of range [1, 2]"},
        MalformedCase{"DuplicateNode", "p min 2 0\nn 1 1\nn 1 -1\n",
                      "line 3: duplicate n line for node 1"},
        MalformedCase{"SupplyTooLarge", "p min 2 0\nn 1 2000000000000\n",
                      "line 2: supply 2000000000000 is beyond"},
        MalformedCase{"ArcSrcOutOfRange", "p min 2 1\na 3 1 0 1 1\n",
                      "line 2: source node 3 is out of range [1, 2]"},
        MalformedCase{"ArcDstOutOfRange", "p min 2 1\na 1 9 0 1 1\n",
                      "line 2: destination node 9 is out of range"},
        MalformedCase{"ArcFieldCount", "p min 2 1\na 1 2 0 1\n",
                      "line 2: a line needs 5 fields"},
        MalformedCase{"ArcExtraField", "p min 2 1\na 1 2 0 1 1 7\n",
                      "line 2: a line needs 5 fields"},
        MalformedCase{"ArcNonNumericCost", "p min 2 1\na 1 2 0 1 1.5\n",
                      "line 2: cost '1.5' is not an integer"},
        MalformedCase{"ArcNonNumericCap", "p min 2 1\na 1 2 0 x 1\n",
                      "line 2: capacity 'x' is not an integer"},
        MalformedCase{"ArcHugeNumber",
                      "p min 2 1\na 1 2 0 99999999999999999999 1\n",
                      "line 2: capacity '99999999999999999999' is out of the "
                      "int64 range"},
        MalformedCase{"NegativeCapacity", "p min 2 1\na 1 2 0 -1 1\n",
                      "line 2: negative capacity -1"},
        MalformedCase{"NegativeLower", "p min 2 1\na 1 2 -1 1 1\n",
                      "line 2: negative lower bound -1"},
        MalformedCase{"CapBelowLow", "p min 2 1\na 1 2 5 4 1\n",
                      "line 2: capacity 4 is below the lower bound 5"},
        MalformedCase{"CapacityTooLarge",
                      "p min 2 1\na 1 2 0 1099511627777 1\n",
                      "line 2: capacity 1099511627777 exceeds "
                      "kMaxArcCapacity"},
        MalformedCase{"CostTooLarge", "p min 2 1\na 1 2 0 1 1073741825\n",
                      "line 2: cost 1073741825 is beyond +-kMaxArcCost"},
        MalformedCase{"CostTooNegative", "p min 2 1\na 1 2 0 1 -1073741825\n",
                      "line 2: cost -1073741825 is beyond +-kMaxArcCost"},
        MalformedCase{"TooManyArcs", "p min 2 1\na 1 2 0 1 1\na 1 2 0 1 1\n",
                      "line 3: more a lines than the 1 arcs"},
        MalformedCase{"TooFewArcs", "c\np min 2 2\na 1 2 0 1 1\n",
                      "line 2: p line declares 2 arcs but the input has 1"},
        MalformedCase{"Unbalanced", "p min 2 0\nn 1 3\nn 2 -2\n",
                      "line 1: supplies sum to 1; a DIMACS min instance "
                      "must be balanced"},
        MalformedCase{"LowerBoundSupplyOverflow",
                      "p min 2 1\nn 1 1099511627776\nn 2 -1099511627776\n"
                      "a 2 1 1 1 0\n",
                      "line 4: removing lower bound 1 moves the supply of "
                      "node 2 to -1099511627777"},
        MalformedCase{"UnknownLineType", "p min 2 0\nx 1 2\n",
                      "line 2: unknown line type 'x'"}),
    [](const ::testing::TestParamInfo<MalformedCase>& param_info) {
      return param_info.param.name;
    });

}  // namespace
}  // namespace flowsched::solver
