#include "services/graph_manager/state_digest.h"

#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/flow/load_spreading_policy.h"

namespace flowsched::graph_manager {
namespace {

using ::flowsched::testing::IsOk;

struct World {
  cluster::ClusterState state;
  flow::FlowNetwork network;
  flow::NetworkBuilder builder{network};
  flow::LoadSpreadingPolicy policy;
  cluster::ChangeSet changes;

  void Apply(cluster::EventBody body, int64_t now_us) {
    ASSERT_THAT(state.Apply({"e", 0, "t", body}, now_us, changes), IsOk());
    ASSERT_THAT(policy.Sync(changes, state, builder), IsOk());
    changes.Clear();
  }
  void Place(uint64_t task, uint64_t machine, int64_t now_us) {
    ASSERT_THAT(state.Place(TaskId(task), MachineId(machine), now_us, changes),
                IsOk());
    ASSERT_THAT(policy.Sync(changes, state, builder), IsOk());
    changes.Clear();
  }
};

void Build(World& w, int64_t clock_us) {
  w.Apply(cluster::MachineAdded{MachineId(1), "r", {}, 4, {{"a", "b"}}},
          clock_us);
  w.Apply(cluster::MachineAdded{MachineId(2), "r", {}, 4, {}}, clock_us);
  cluster::JobSubmitted job{JobId(3), "j", 0, {}};
  for (uint64_t t = 1; t <= 3; ++t) job.tasks.push_back({.id = TaskId(t)});
  w.Apply(job, clock_us);
  w.Place(1, 2, clock_us + 5);
}

TEST(StateDigestTest, SameHistoryGivesSameDigestWhateverTheClock) {
  World a, b;
  Build(a, 1000);
  Build(b, 987654321);
  EXPECT_EQ(StateDigest(a.state, a.network), StateDigest(b.state, b.network));
  EXPECT_EQ(StateDigest(a.state, a.network).size(), 32u);
}

TEST(StateDigestTest, AnySchedulingDifferenceChangesTheDigest) {
  World a, b, c;
  Build(a, 1);
  Build(b, 1);
  Build(c, 1);
  const std::string base = StateDigest(a.state, a.network);
  b.Place(2, 1, 1);  // one more placement
  EXPECT_NE(StateDigest(b.state, b.network), base);
  c.Apply(cluster::TaskFinished{JobId(3), TaskId(3)}, 1);
  EXPECT_NE(StateDigest(c.state, c.network), base);
}

// Issue #32: a gang's min_members is scheduling state.
TEST(StateDigestTest, AGangsMinMembersChangesTheDigest) {
  World a, b;
  for (World* w : {&a, &b}) {
    cluster::JobSubmitted job{JobId(3), "j", 0, {}};
    for (uint64_t t = 1; t <= 3; ++t) job.tasks.push_back({.id = TaskId(t)});
    job.min_members = w == &a ? 0 : 3;
    w->Apply(job, 1);
  }
  EXPECT_NE(StateDigest(a.state, a.network), StateDigest(b.state, b.network));
}

// Issue #31: device assignments, asks and named scalars are scheduling
// state; two states that differ only there have different digests.
TEST(StateDigestTest, DevicesAndScalarsChangeTheDigest) {
  const auto build = [](World& w, std::optional<int64_t> storage, int64_t milli,
                        uint64_t first_task_milli) {
    cluster::MachineAdded m{MachineId(1), "r", {}, 4, {}};
    m.accelerators = {{.count = 2, .model = "a10"}};
    w.Apply(m, 1);
    cluster::JobSubmitted job{JobId(3), "j", 0, {}};
    for (uint64_t t = 1; t <= 2; ++t) {
      cluster::TaskSpec& spec = job.tasks.emplace_back();
      spec.id = TaskId(t);
      spec.accelerator.milli =
          t == 1 ? static_cast<int64_t>(first_task_milli) : milli;
      if (storage.has_value()) spec.request.scalars.Set("disk", *storage);
    }
    w.Apply(job, 1);
  };
  World a, b, c, d;
  build(a, std::nullopt, 500, 600);
  build(b, std::nullopt, 500, 600);
  build(c, 7, 500, 600);
  build(d, std::nullopt, 300, 600);
  const std::string base = StateDigest(a.state, a.network);
  EXPECT_EQ(StateDigest(b.state, b.network), base);
  EXPECT_NE(StateDigest(c.state, c.network), base);  // a scalar
  EXPECT_NE(StateDigest(d.state, d.network), base);  // an ask
  // Task 1 (600) takes device 0; task 2 (500) does not fit beside it and
  // takes device 1. Placed the other way round, 2 takes device 0 and 1
  // device 1: the same tasks on the same machine, other devices.
  a.Place(1, 1, 2);
  a.Place(2, 1, 2);
  b.Place(2, 1, 2);
  b.Place(1, 1, 2);
  ASSERT_EQ(a.state.FindTask(TaskId(1))->devices.at(0).index, 0u);
  ASSERT_EQ(b.state.FindTask(TaskId(1))->devices.at(0).index, 1u);
  EXPECT_NE(StateDigest(a.state, a.network), StateDigest(b.state, b.network));
}

}  // namespace
}  // namespace flowsched::graph_manager
