#include "services/flow/incremental_placements.h"

#include <map>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"

namespace flowsched::flow {

void PrintTo(const TaskPlacement& p, std::ostream* os) {
  *os << "{node " << p.task_node << " task " << p.task_id << " on "
      << p.machine_id << " runs " << p.running_on << "}";
}

namespace {

using ::flowsched::testing::IsOk;
using ::testing::Not;

// A scheduling-shaped network (X, racks, machines, one unscheduled
// aggregator per job, tasks with arcs to U, X, a rack and two machines)
// whose flow is the sum of one route per task. Each round changes some
// routes, adds and removes tasks, moves running_on, and re-creates arcs
// (slots reused), logging what changed as IncrementalMirror does.
class ShapedNetwork {
 public:
  explicit ShapedNetwork(uint32_t seed) : rng_(seed) {
    sink_ = net_.AddNode({.kind = NodeKind::kSink});
    x_ = net_.AddNode({.kind = NodeKind::kClusterAggregator});
    for (int r = 0; r < kRacks; ++r) {
      racks_.push_back(net_.AddNode({.kind = NodeKind::kRack}));
      Set(x_, racks_.back());
    }
    for (int m = 0; m < kMachines; ++m) {
      machines_.push_back(
          net_.AddNode({.kind = NodeKind::kMachine, .entity_id = 1000u + m}));
      Set(racks_[m % kRacks], machines_.back());
      Set(x_, machines_.back());
      Set(machines_.back(), sink_);
    }
    for (uint64_t j = 1; j <= 3; ++j) {
      jobs_.push_back(
          net_.AddNode({.kind = NodeKind::kJobUnscheduled, .entity_id = j}));
      Set(jobs_.back(), sink_);
    }
    for (int t = 0; t < 60; ++t) AddTask();
    Reflow();
    log_.MarkEverything();
  }

  // Randomly changes routes, tasks, running_on and arcs; logs it all.
  void Mutate() {
    SnapshotTails();
    std::uniform_int_distribution<int> pct(0, 99);
    for (auto& [node, task] : tasks_) {
      if (pct(rng_) < 8) task.route = Route(rng_());
      if (pct(rng_) < 5) {
        const uint64_t on = pct(rng_) < 50 ? PlacedEntity(node) : 0;
        ASSERT_THAT(net_.UpdateNode(node, 1, on), IsOk());
        log_.nodes.push_back(node);
      }
    }
    if (pct(rng_) < 40 && !tasks_.empty()) {
      auto it = tasks_.begin();
      std::advance(it, static_cast<int64_t>(rng_() % tasks_.size()));
      ASSERT_THAT(net_.RemoveNode(it->first), IsOk());
      log_.nodes.push_back(it->first);
      tasks_.erase(it);
    }
    if (pct(rng_) < 40) AddTask();
    if (pct(rng_) < 30) {
      // Re-created: its slot may go to another arc.
      const NodeId m = machines_[rng_() % machines_.size()];
      ASSERT_THAT(net_.RemoveArc(x_, m), IsOk());
      if (pct(rng_) < 50) AddTask();
      Set(x_, m);
    }
    Reflow();
  }

  // Routes 0-4: U; a preferred machine; X -> rack -> machine; X ->
  // machine; rack -> machine. 5: X -> U (outside the incremental shape).
  void Reflow() {
    std::vector<int64_t> flow(net_.arc_slot_count(), 0);
    const auto add = [&](NodeId src, NodeId dst) {
      flow[net_.FindArc(src, dst)->slot] += 1;
    };
    for (const auto& [node, task] : tasks_) {
      const NodeId m = machines_[task.route.machine % machines_.size()];
      const NodeId rack = racks_[task.route.machine % kRacks];
      switch (task.route.kind) {
        case 0:
          add(node, task.job);
          add(task.job, sink_);
          continue;
        case 1:
          add(node, task.preferred);
          add(task.preferred, sink_);
          continue;
        case 2:
          add(node, x_);
          add(x_, rack);
          add(rack, m);
          break;
        case 3:
          add(node, x_);
          add(x_, m);
          break;
        case 4:
          add(node, task.rack);
          add(task.rack, machines_[task.rack_machine]);
          add(machines_[task.rack_machine], sink_);
          continue;
        default:
          add(node, x_);
          add(x_, task.job);
          add(task.job, sink_);
          continue;
      }
      add(m, sink_);
    }
    // As the mirror logs it: a slot whose flow moved, or whose arc was
    // removed with flow (its successor in the slot may carry the same).
    for (size_t s = 0; s < flow.size(); ++s) {
      const int64_t before = s < flow_.size() ? flow_[s] : 0;
      NodeId src = kNoNode, dst = kNoNode;
      const bool live = net_.ArcEnds(static_cast<ArcSlot>(s), src, dst);
      const Ends was = s < ends_.size() ? ends_[s] : Ends{};
      const bool replaced = before > 0 && (was.src != src || was.dst != dst);
      if (before == flow[s] && !replaced) continue;
      log_.slots.push_back(static_cast<ArcSlot>(s));
      if (live) log_.nodes.push_back(src);
      if (was.src != kNoNode) log_.nodes.push_back(was.src);
    }
    flow_ = std::move(flow);
    bits_.assign((flow_.size() + 63) / 64, 0);
    for (size_t s = 0; s < flow_.size(); ++s) {
      if (flow_[s] > 0) bits_[s / 64] |= uint64_t{1} << (s % 64);
    }
  }

  void AllowOutsideShape() {
    outside_ = true;
    for (NodeId job : jobs_) Set(x_, job);
    Reflow();
  }

  const FlowNetwork& net() const { return net_; }
  const std::vector<int64_t>& flow() const { return flow_; }
  const std::vector<uint64_t>& bits() const { return bits_; }
  FlowChangeLog& log() { return log_; }

 private:
  static constexpr int kRacks = 3;
  static constexpr int kMachines = 9;
  struct TaskRoute {
    int kind = 0;
    uint32_t machine = 0;
  };
  struct Task {
    NodeId job, preferred, rack;
    uint32_t rack_machine;
    TaskRoute route;
  };

  void Set(NodeId src, NodeId dst) {
    ASSERT_THAT(net_.SetArc(src, dst, 1000, 0), IsOk());
  }
  TaskRoute Route(uint64_t draw) const {
    const int kinds = outside_ ? 6 : 5;
    return {static_cast<int>(draw % kinds), static_cast<uint32_t>(draw / 7)};
  }
  void AddTask() {
    const NodeId node = net_.AddNode(
        {.kind = NodeKind::kTask, .supply = 1, .entity_id = ++next_task_id_});
    Task task;
    task.job = jobs_[rng_() % jobs_.size()];
    task.preferred = machines_[rng_() % machines_.size()];
    const uint32_t r = rng_() % kRacks;
    task.rack = racks_[r];
    task.rack_machine = r + kRacks * (rng_() % (kMachines / kRacks));
    task.route = Route(rng_());
    Set(node, task.job);
    Set(node, x_);
    Set(node, task.preferred);
    Set(node, task.rack);
    tasks_[node] = task;
    log_.nodes.push_back(node);
  }
  // The machine the full extraction places `node` on now.
  uint64_t PlacedEntity(NodeId node) const {
    auto all = ExtractPlacements(net_, flow_);
    if (!all.ok()) return 0;
    for (const TaskPlacement& p : *all) {
      if (p.task_node == node) return p.machine_id;
    }
    return 0;
  }
  void SnapshotTails() {
    ends_.assign(net_.arc_slot_count(), Ends{});
    for (size_t s = 0; s < ends_.size(); ++s) {
      if (!net_.ArcEnds(static_cast<ArcSlot>(s), ends_[s].src, ends_[s].dst)) {
        ends_[s] = Ends{};
      }
    }
  }

  std::mt19937_64 rng_;
  FlowNetwork net_;
  NodeId sink_, x_;
  std::vector<NodeId> racks_, machines_, jobs_;
  std::map<NodeId, Task> tasks_;
  uint64_t next_task_id_ = 0;
  bool outside_ = false;
  std::vector<int64_t> flow_;
  std::vector<uint64_t> bits_;
  struct Ends {
    NodeId src = kNoNode;
    NodeId dst = kNoNode;
  };
  std::vector<Ends> ends_;
  FlowChangeLog log_;
};

// The kept placements against a full extraction of the same flow.
void ExpectSameAsFull(const ShapedNetwork& shaped,
                      const IncrementalPlacements& kept) {
  auto full = ExtractPlacements(shaped.net(), shaped.flow());
  ASSERT_THAT(full, IsOk());
  std::vector<TaskPlacement> moved;
  uint64_t placed = 0;
  for (const TaskPlacement& p : *full) {
    if (p.machine_id != p.running_on) moved.push_back(p);
    placed += p.machine_id != 0;
  }
  EXPECT_EQ(kept.moved(), moved);
  EXPECT_EQ(kept.tasks(), full->size());
  EXPECT_EQ(kept.tasks_placed(), placed);
  const std::vector<TaskPlacement> all = kept.All(shaped.net());
  ASSERT_EQ(all.size(), full->size());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i], (*full)[i]) << "task " << i;
  }
}

TEST(IncrementalPlacementsTest, RandomRoundsMatchTheFullExtraction) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    ShapedNetwork shaped(seed);
    IncrementalPlacements kept;
    int incremental = 0;
    for (int round = 0; round < 60; ++round) {
      SCOPED_TRACE(round);
      if (round > 0) shaped.Mutate();
      ASSERT_THAT(
          kept.Update(shaped.net(), shaped.flow(), shaped.bits(), shaped.log()),
          IsOk());
      EXPECT_TRUE(shaped.log().slots.empty() && !shaped.log().everything);
      incremental += kept.last_full() ? 0 : 1;
      ExpectSameAsFull(shaped, kept);
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_EQ(incremental, 59);  // all but the first
  }
}

TEST(IncrementalPlacementsTest, FlowOutsideTheShapeIsExtractedInFull) {
  ShapedNetwork shaped(7);
  shaped.AllowOutsideShape();
  IncrementalPlacements kept;
  int full = 0;
  for (int round = 0; round < 80; ++round) {
    if (round > 0) shaped.Mutate();
    ASSERT_THAT(
        kept.Update(shaped.net(), shaped.flow(), shaped.bits(), shaped.log()),
        IsOk());
    full += kept.last_full() ? 1 : 0;
    ExpectSameAsFull(shaped, kept);
  }
  // Once an X -> U route exists, rounds stay full while it lasts.
  EXPECT_GT(full, 40);
}

TEST(IncrementalPlacementsTest, AnUntraceableRoundFailsAndTheNextIsFull) {
  FlowNetwork net;
  const NodeId sink = net.AddNode({.kind = NodeKind::kSink});
  const NodeId m1 = net.AddNode({.kind = NodeKind::kMachine, .entity_id = 7});
  const NodeId m2 = net.AddNode({.kind = NodeKind::kMachine, .entity_id = 8});
  const NodeId t =
      net.AddNode({.kind = NodeKind::kTask, .supply = 1, .entity_id = 1});
  for (auto [src, dst] : {std::pair{t, m1}, {t, m2}, {m1, sink}, {m2, sink}}) {
    ASSERT_THAT(net.SetArc(src, dst, 2, 0), IsOk());
  }
  const auto slot = [&](NodeId src, NodeId dst) {
    return net.FindArc(src, dst)->slot;
  };
  std::vector<int64_t> flow(net.arc_slot_count(), 0);
  flow[slot(t, m1)] = flow[slot(m1, sink)] = 1;
  std::vector<uint64_t> bits = {0};
  const auto set_bits = [&] {
    bits[0] = 0;
    for (size_t s = 0; s < flow.size(); ++s) {
      if (flow[s] > 0) bits[0] |= uint64_t{1} << s;
    }
  };
  set_bits();
  IncrementalPlacements kept;
  FlowChangeLog log;
  ASSERT_THAT(kept.Update(net, flow, bits, log), IsOk());
  EXPECT_EQ(kept.tasks_placed(), 1u);
  ASSERT_EQ(kept.moved().size(), 1u);
  EXPECT_EQ(kept.moved()[0].machine_id, 7u);

  // Two units leave the task: the full extraction's error.
  flow[slot(t, m2)] = flow[slot(m2, sink)] = 1;
  set_bits();
  log.slots = {slot(t, m2), slot(m2, sink)};
  log.nodes = {t, m2};
  EXPECT_THAT(kept.Update(net, flow, bits, log), Not(IsOk()));
  EXPECT_TRUE(kept.last_full());

  flow[slot(t, m1)] = flow[slot(m1, sink)] = 0;
  set_bits();
  log.slots = {slot(t, m1), slot(m1, sink)};
  log.nodes = {t, m1};
  ASSERT_THAT(kept.Update(net, flow, bits, log), IsOk());
  EXPECT_TRUE(kept.last_full());
  ASSERT_EQ(kept.moved().size(), 1u);
  EXPECT_EQ(kept.moved()[0].machine_id, 8u);
  log.slots.clear();
  log.nodes.clear();
  ASSERT_THAT(kept.Update(net, flow, bits, log), IsOk());
  EXPECT_FALSE(kept.last_full());
}

}  // namespace
}  // namespace flowsched::flow
