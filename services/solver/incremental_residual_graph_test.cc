#include "services/solver/incremental_residual_graph.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "services/solver/mcmf_problem.h"

namespace flowsched::solver {
namespace {

// What the graph should hold for one live handle.
struct ModelArc {
  uint32_t src = 0;
  uint32_t dst = 0;
  int64_t capacity = 0;
  int64_t cost = 0;
  int64_t flow = 0;
};

using EntryKey = std::tuple<uint32_t, uint32_t, int64_t, int64_t, int64_t>;

// (arc, head, cost, residual, mate_residual) of every entry of u, sorted.
std::vector<EntryKey> EntriesOf(const IncrementalResidualGraph& g, uint32_t u) {
  std::vector<EntryKey> keys;
  for (const auto& e : g.entries(u)) {
    keys.emplace_back(e.arc, e.head, e.cost, e.residual, e.mate_residual);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::vector<EntryKey> ExpectedEntries(const std::map<uint32_t, ModelArc>& model,
                                      uint32_t u) {
  std::vector<EntryKey> keys;
  for (const auto& [h, a] : model) {
    const int64_t residual = a.capacity - a.flow;
    if (a.src == u) keys.emplace_back(2 * h, a.dst, a.cost, residual, a.flow);
    if (a.dst == u) {
      keys.emplace_back(2 * h + 1, a.src, -a.cost, a.flow, residual);
    }
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

// Every invariant of the file comment, and the contents against the model.
void ExpectMatches(const IncrementalResidualGraph& g,
                   const std::map<uint32_t, ModelArc>& model, uint32_t nodes) {
  for (uint32_t u = 0; u < nodes; ++u) {
    ASSERT_TRUE(g.RegionsHold(u)) << "node " << u;
    ASSERT_EQ(EntriesOf(g, u), ExpectedEntries(model, u)) << "node " << u;
    const auto& list = g.entries(u);
    for (uint32_t i = 0; i < list.size(); ++i) {
      EXPECT_TRUE(g.MirrorsArc(list[i]));
      EXPECT_EQ(g.arc(list[i].arc).adj_pos, i);
      EXPECT_EQ(g.Tail(list[i].arc), u);
    }
    // A search reads exactly the entries with residual on its side.
    for (const bool backward : {false, true}) {
      const auto [begin, end] = g.SearchRange(u, backward);
      for (uint32_t i = 0; i < list.size(); ++i) {
        const bool open =
            backward ? list[i].mate_residual > 0 : list[i].residual > 0;
        EXPECT_EQ(open, begin <= i && i < end)
            << "node " << u << " entry " << i << " backward " << backward;
      }
    }
  }
  for (const auto& [h, a] : model) {
    EXPECT_TRUE(g.HandleLive(h));
    EXPECT_EQ(g.flow(h), a.flow);
    EXPECT_EQ(g.capacity(h), a.capacity);
  }
}

TEST(IncrementalResidualGraphTest, EmptyGraphHasNoHandles) {
  IncrementalResidualGraph g;
  g.ResizeNodes(3);
  EXPECT_EQ(g.handle_limit(), 0u);
  EXPECT_FALSE(g.HandleLive(0));
  EXPECT_EQ(g.flow(7), 0);
  g.PlaceMisplaced();
  ExpectMatches(g, {}, 3);
}

TEST(IncrementalResidualGraphTest, AddedArcLandsInItsRegions) {
  IncrementalResidualGraph g;
  g.ResizeNodes(2);
  g.AddArc(0, 0, 1, /*capacity=*/5, /*cost=*/3);
  g.AddArc(1, 1, 0, /*capacity=*/0, /*cost=*/-2);
  g.PlaceMisplaced();
  ExpectMatches(g, {{0, {0, 1, 5, 3, 0}}, {1, {1, 0, 0, -2, 0}}}, 2);
  // Node 0: arc 0 leaves with capacity (region 2), the partner of the
  // closed arc 1 has none either way (region 3).
  EXPECT_EQ(g.SearchRange(0, /*backward=*/false), std::pair(0u, 1u));
  EXPECT_EQ(g.SearchRange(0, /*backward=*/true), std::pair(0u, 0u));
  EXPECT_EQ(g.SearchRange(1, /*backward=*/true), std::pair(0u, 1u));
}

TEST(IncrementalResidualGraphTest, FlowMovesEntriesBetweenRegions) {
  IncrementalResidualGraph g;
  g.ResizeNodes(2);
  g.AddArc(0, 0, 1, 2, 1);
  g.PlaceMisplaced();
  g.MoveResidual(0, 1);  // half full: open both ways
  g.PlaceMisplaced();
  ExpectMatches(g, {{0, {0, 1, 2, 1, 1}}}, 2);
  g.MoveResidual(0, 1);  // full: only the reverse is open
  g.PlaceMisplaced();
  ExpectMatches(g, {{0, {0, 1, 2, 1, 2}}}, 2);
  const auto [begin, end] = g.SearchRange(0, /*backward=*/false);
  EXPECT_EQ(begin, end);  // nothing leaves node 0 with capacity
  g.MoveResidual(1, 2);   // cancelled along the reverse arc
  g.PlaceMisplaced();
  ExpectMatches(g, {{0, {0, 1, 2, 1, 0}}}, 2);
}

TEST(IncrementalResidualGraphTest, SelfLoopKeepsBothEntriesExact) {
  IncrementalResidualGraph g;
  g.ResizeNodes(1);
  g.AddArc(0, 0, 0, 4, -1);
  g.MoveResidual(0, 3);
  g.PlaceMisplaced();
  ExpectMatches(g, {{0, {0, 0, 4, -1, 3}}}, 1);
  g.MoveResidual(1, 3);
  g.RemoveArc(0);
  g.PlaceMisplaced();
  ExpectMatches(g, {}, 1);
  EXPECT_FALSE(g.HandleLive(0));
}

// Random changes against the model: adds (parallel arcs included), removals
// (after cancelling the flow, as the solver does), flow moves both ways,
// cost and capacity changes, with PlaceMisplaced every few steps.
TEST(IncrementalResidualGraphTest, RandomChangesKeepEveryInvariant) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    const uint32_t nodes = 2 + rng() % 8;
    IncrementalResidualGraph g;
    g.ResizeNodes(nodes);
    std::map<uint32_t, ModelArc> model;
    for (int step = 0; step < 300; ++step) {
      const uint32_t h = rng() % 24;
      const bool live = model.count(h) != 0;
      const uint32_t op = rng() % 5;
      if (!live) {
        const ModelArc a{static_cast<uint32_t>(rng() % nodes),
                         static_cast<uint32_t>(rng() % nodes),
                         static_cast<int64_t>(rng() % 4),
                         static_cast<int64_t>(rng() % 21) - 10, 0};
        g.AddArc(h, a.src, a.dst, a.capacity, a.cost);
        model[h] = a;
      } else if (op == 0) {
        ModelArc& a = model[h];
        if (a.flow > 0) g.MoveResidual(2 * h + 1, a.flow);
        g.RemoveArc(h);
        model.erase(h);
      } else if (op == 1) {
        ModelArc& a = model[h];
        const int64_t delta = a.capacity - a.flow;
        if (delta > 0) g.MoveResidual(2 * h, delta);
        a.flow = a.capacity;
      } else if (op == 2) {
        ModelArc& a = model[h];
        if (a.flow > 0) g.MoveResidual(2 * h + 1, 1);
        a.flow = std::max<int64_t>(a.flow - 1, 0);
      } else if (op == 3) {
        ModelArc& a = model[h];
        a.cost = static_cast<int64_t>(rng() % 21) - 10;
        g.SetCost(h, a.cost);
      } else {
        ModelArc& a = model[h];
        a.capacity = static_cast<int64_t>(rng() % 5);
        a.flow = std::min(a.flow, a.capacity);
        g.SetCapacityAndFlow(h, a.capacity, a.flow);
      }
      if (step % 7 == 6) {
        g.PlaceMisplaced();
        ExpectMatches(g, model, nodes);
        if (::testing::Test::HasFailure()) {
          FAIL() << "seed " << seed << " step " << step;
        }
      }
    }
  }
}

// Load lays the lists out in their regions at once: no PlaceMisplaced, and
// the same contents as adding the arcs one by one.
TEST(IncrementalResidualGraphTest, LoadEqualsAddingEachArc) {
  std::mt19937 rng(7);
  McmfProblem problem;
  problem.node_count = 30;
  problem.supply.assign(problem.node_count, 0);
  for (int a = 0; a < 200; ++a) {
    problem.arcs.push_back(McmfArc{.src = static_cast<uint32_t>(rng() % 30),
                                   .dst = static_cast<uint32_t>(rng() % 30),
                                   .capacity = static_cast<int64_t>(rng() % 3),
                                   .cost = static_cast<int64_t>(rng() % 9)});
  }
  IncrementalResidualGraph loaded;
  loaded.ResizeNodes(problem.node_count);
  ASSERT_TRUE(loaded.Load(problem, [] { return false; }));
  IncrementalResidualGraph added;
  added.ResizeNodes(problem.node_count);
  std::map<uint32_t, ModelArc> model;
  for (uint32_t h = 0; h < problem.arcs.size(); ++h) {
    const McmfArc& a = problem.arcs[h];
    added.AddArc(h, a.src, a.dst, a.capacity, a.cost);
    model[h] = ModelArc{a.src, a.dst, a.capacity, a.cost, 0};
  }
  added.PlaceMisplaced();
  ExpectMatches(loaded, model, problem.node_count);
  ExpectMatches(added, model, problem.node_count);
  for (uint32_t u = 0; u < problem.node_count; ++u) {
    EXPECT_EQ(EntriesOf(loaded, u), EntriesOf(added, u));
    EXPECT_EQ(loaded.regions(u).end[0], added.regions(u).end[0]);
    EXPECT_EQ(loaded.regions(u).end[2], added.regions(u).end[2]);
  }
}

TEST(IncrementalResidualGraphTest, LoadStopsWhenAsked) {
  McmfProblem problem;
  problem.node_count = 2;
  problem.supply.assign(2, 0);
  problem.arcs.assign(40'000, McmfArc{.src = 0, .dst = 1, .capacity = 1});
  IncrementalResidualGraph g;
  g.ResizeNodes(2);
  int asked = 0;
  EXPECT_FALSE(g.Load(problem, [&asked] { return ++asked == 2; }));
  EXPECT_EQ(asked, 2);
}

}  // namespace
}  // namespace flowsched::solver
