#include "services/solver/static_residual_graph.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "services/solver/mcmf_problem.h"
#include "services/solver/no_index.h"
#include "services/solver/problem_validator.h"
#include "services/solver/test_graphs.h"

namespace flowsched::solver {
namespace {

McmfProblem ZeroSupplyProblem(uint32_t node_count, std::vector<McmfArc> arcs) {
  McmfProblem problem;
  problem.node_count = node_count;
  problem.supply.assign(node_count, 0);
  problem.arcs = std::move(arcs);
  return problem;
}

// Every property the solvers rely on, checked against the input.
void ExpectResidualNetworkOf(const McmfProblem& problem,
                             const StaticResidualGraph& graph,
                             int64_t cost_scale) {
  const uint32_t n = problem.node_count;
  const size_t m = problem.arcs.size();
  ASSERT_EQ(graph.node_count(), n);
  ASSERT_EQ(graph.arc_count(), 2 * m);

  // Blocks: contiguous, in node order, covering every residual arc.
  ASSERT_EQ(graph.first_out(0), 0u);
  for (uint32_t v = 0; v < n; ++v) {
    ASSERT_LE(graph.first_out(v), graph.first_out(v + 1)) << "node " << v;
  }
  ASSERT_EQ(graph.first_out(n), graph.arc_count());

  // Each input arc: a forward arc with its capacity and (scaled) cost, and
  // a reverse arc with residual 0 and the negated cost, mates of each
  // other. Together they cover every residual arc exactly once.
  std::vector<uint32_t> input_of(graph.arc_count(), kNoIndex);
  for (size_t i = 0; i < m; ++i) {
    SCOPED_TRACE("input arc " + std::to_string(i));
    const McmfArc& in = problem.arcs[i];
    const uint32_t fwd = graph.forward_arc(i);
    ASSERT_LT(fwd, graph.arc_count());
    const uint32_t rev = graph.arc(fwd).mate;
    ASSERT_LT(rev, graph.arc_count());
    ASSERT_NE(fwd, rev);
    EXPECT_EQ(graph.arc(fwd).head, in.dst);
    EXPECT_EQ(graph.tail(fwd), in.src);
    EXPECT_EQ(graph.arc(fwd).residual, in.capacity);
    EXPECT_EQ(graph.arc(fwd).cost, in.cost * cost_scale);
    EXPECT_EQ(graph.arc(rev).head, in.src);
    EXPECT_EQ(graph.tail(rev), in.dst);
    EXPECT_EQ(graph.arc(rev).residual, 0);
    EXPECT_EQ(graph.arc(rev).cost, -in.cost * cost_scale);
    ASSERT_EQ(input_of[fwd], kNoIndex);
    ASSERT_EQ(input_of[rev], kNoIndex);
    input_of[fwd] = static_cast<uint32_t>(i);
    input_of[rev] = static_cast<uint32_t>(i);
  }

  // Mates are involutive, and an arc lies in its tail's block. Within a
  // block, arcs follow input order (a self-loop's forward arc before its
  // reverse).
  for (uint32_t v = 0; v < n; ++v) {
    size_t degree = 0;
    for (const McmfArc& in : problem.arcs) {
      degree += (in.src == v ? 1 : 0) + (in.dst == v ? 1 : 0);
    }
    EXPECT_EQ(graph.first_out(v + 1) - graph.first_out(v), degree)
        << "node " << v;
    for (uint32_t a = graph.first_out(v); a < graph.first_out(v + 1); ++a) {
      SCOPED_TRACE("node " + std::to_string(v) + ", arc " + std::to_string(a));
      const uint32_t mate = graph.arc(a).mate;
      EXPECT_EQ(graph.arc(mate).mate, a);
      EXPECT_EQ(graph.tail(a), v);
      if (a > graph.first_out(v)) {
        EXPECT_LE(input_of[a - 1], input_of[a]);
        if (input_of[a - 1] == input_of[a]) {
          EXPECT_EQ(graph.forward_arc(input_of[a]), a - 1);
        }
      }
    }
  }
}

TEST(StaticResidualGraphTest, EmptyGraph) {
  StaticResidualGraph graph;
  const McmfProblem empty = ZeroSupplyProblem(0, {});
  graph.Build(empty);
  EXPECT_EQ(graph.node_count(), 0u);
  EXPECT_EQ(graph.arc_count(), 0u);
  EXPECT_EQ(graph.first_out(0), 0u);
  ExpectResidualNetworkOf(empty, graph, 1);
}

TEST(StaticResidualGraphTest, NodesWithoutArcsHaveEmptyBlocks) {
  StaticResidualGraph graph;
  const McmfProblem problem = ZeroSupplyProblem(3, {});
  graph.Build(problem);
  for (uint32_t v = 0; v <= 3; ++v) EXPECT_EQ(graph.first_out(v), 0u);
  ExpectResidualNetworkOf(problem, graph, 1);
}

TEST(StaticResidualGraphTest, SmallGraphLaidOutByTailInInputOrder) {
  // 0 -> 1, 2 -> 0, 0 -> 2: node 0's block holds arc 0's forward arc,
  // arc 1's reverse and arc 2's forward, in that order.
  const McmfProblem problem =
      ZeroSupplyProblem(3, {{0, 1, 4, 7}, {2, 0, 5, -3}, {0, 2, 6, 2}});
  StaticResidualGraph graph;
  graph.Build(problem);
  ExpectResidualNetworkOf(problem, graph, 1);
  EXPECT_EQ(graph.first_out(1), 3u);
  EXPECT_EQ(graph.forward_arc(0), 0u);
  EXPECT_EQ(graph.arc(1).mate, graph.forward_arc(1));
  EXPECT_EQ(graph.arc(1).residual, 0);
  EXPECT_EQ(graph.arc(1).cost, 3);
  EXPECT_EQ(graph.forward_arc(2), 2u);
}

TEST(StaticResidualGraphTest, ParallelArcsStayDistinct) {
  const McmfProblem problem = ZeroSupplyProblem(
      2, {{0, 1, 3, 1}, {0, 1, 4, 2}, {1, 0, 5, 3}, {0, 1, 0, 4}});
  StaticResidualGraph graph;
  graph.Build(problem);
  ExpectResidualNetworkOf(problem, graph, 1);
  EXPECT_NE(graph.forward_arc(0), graph.forward_arc(1));
  EXPECT_NE(graph.forward_arc(1), graph.forward_arc(3));
  EXPECT_EQ(graph.arc(graph.forward_arc(3)).residual, 0);  // capacity 0
}

TEST(StaticResidualGraphTest, SelfLoopKeepsBothArcsInItsNode) {
  const McmfProblem problem =
      ZeroSupplyProblem(2, {{0, 1, 1, 1}, {1, 1, 2, -5}, {1, 0, 1, 1}});
  StaticResidualGraph graph;
  graph.Build(problem);
  ExpectResidualNetworkOf(problem, graph, 1);
  const uint32_t fwd = graph.forward_arc(1);
  const uint32_t rev = graph.arc(fwd).mate;
  EXPECT_EQ(rev, fwd + 1);
  for (const uint32_t a : {fwd, rev}) {
    EXPECT_GE(a, graph.first_out(1));
    EXPECT_LT(a, graph.first_out(2));
    EXPECT_EQ(graph.arc(a).head, 1u);
  }
}

TEST(StaticResidualGraphTest, ScalesCosts) {
  const McmfProblem problem =
      ZeroSupplyProblem(2, {{0, 1, 1, 3}, {1, 0, 1, -4}});
  StaticResidualGraph graph;
  graph.Build(problem, 5);
  ExpectResidualNetworkOf(problem, graph, 5);
  EXPECT_EQ(graph.arc(graph.forward_arc(1)).cost, -20);
}

TEST(StaticResidualGraphTest, BuildWithCostsWritesTheGivenCosts) {
  const McmfProblem problem =
      ZeroSupplyProblem(3, {{0, 1, 2, 3}, {1, 2, 1, -4}, {2, 0, 5, 0}});
  StaticResidualGraph graph;
  // A solver's own cost per arc, say a reduced cost; here 10 * i - 7.
  graph.BuildWithCosts(
      problem, [](size_t i) { return 10 * static_cast<int64_t>(i) - 7; },
      [](size_t, uint32_t) {});
  for (size_t i = 0; i < problem.arcs.size(); ++i) {
    const StaticResidualGraph::Arc& fwd = graph.arc(graph.forward_arc(i));
    EXPECT_EQ(fwd.cost, 10 * static_cast<int64_t>(i) - 7) << "arc " << i;
    EXPECT_EQ(graph.arc(fwd.mate).cost, -fwd.cost) << "arc " << i;
    EXPECT_EQ(fwd.residual, problem.arcs[i].capacity) << "arc " << i;
    EXPECT_EQ(fwd.head, problem.arcs[i].dst) << "arc " << i;
  }
}

TEST(StaticResidualGraphTest, RandomNetworksWithParallelArcsAndSelfLoops) {
  testgen::RandomNetworkOptions options;
  options.node_count = 40;
  options.arc_count = 300;
  options.parallel_arc_fraction = 0.2;
  options.self_loop_fraction = 0.05;
  StaticResidualGraph graph;  // rebuilt each time: nothing may carry over
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const McmfProblem problem = testgen::RandomFeasibleNetwork(seed, options);
    ASSERT_TRUE(ValidateProblem(problem).ok());
    graph.Build(problem, static_cast<int64_t>(seed));
    ExpectResidualNetworkOf(problem, graph, static_cast<int64_t>(seed));
  }
}

TEST(StaticResidualGraphTest, SchedulingNetwork) {
  const McmfProblem problem = testgen::SchedulingNetwork(7, {});
  ASSERT_TRUE(ValidateProblem(problem).ok());
  StaticResidualGraph graph;
  graph.Build(problem);
  ExpectResidualNetworkOf(problem, graph, 1);
}

TEST(StaticResidualGraphTest, CallsPlacedOncePerInputArcInOrder) {
  const McmfProblem problem = testgen::SchedulingNetwork(5, {});
  StaticResidualGraph graph;
  std::vector<std::pair<size_t, uint32_t>> calls;
  graph.Build(problem, 3, [&](size_t i, uint32_t a) {
    calls.emplace_back(i, a);
    // Both arcs are in place when the callback runs.
    const McmfArc& in = problem.arcs[i];
    EXPECT_EQ(graph.arc(a).head, in.dst);
    EXPECT_EQ(graph.arc(a).residual, in.capacity);
    EXPECT_EQ(graph.arc(a).cost, 3 * in.cost);
    EXPECT_EQ(graph.arc(graph.arc(a).mate).head, in.src);
    EXPECT_EQ(graph.arc(graph.arc(a).mate).mate, a);
  });
  ASSERT_EQ(calls.size(), problem.arcs.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].first, i);
    EXPECT_EQ(calls[i].second, graph.forward_arc(i));
  }
  ExpectResidualNetworkOf(problem, graph, 3);
}

TEST(StaticResidualGraphTest, RebuildReplacesTheGraph) {
  StaticResidualGraph graph;
  graph.Build(testgen::SchedulingNetwork(3, {}));
  const McmfProblem smaller = ZeroSupplyProblem(2, {{1, 0, 2, 9}});
  graph.Build(smaller);
  ExpectResidualNetworkOf(smaller, graph, 1);
}

}  // namespace
}  // namespace flowsched::solver
