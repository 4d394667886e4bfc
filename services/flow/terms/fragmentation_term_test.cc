#include "services/flow/terms/fragmentation_term.h"

#include <cmath>
#include <cstdint>

#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "services/flow/terms/term_test_util.h"

namespace flowsched::flow {
namespace {

using ::flowsched::testing::IsOk;
using testing::MachineWith;

cluster::TaskSpec GpuTask(uint64_t id, uint32_t whole, int64_t milli) {
  cluster::TaskSpec spec;
  spec.id = TaskId(id);
  spec.accelerator.whole = whole;
  spec.accelerator.milli = milli;
  return spec;
}

RequestShape HalfGpu() {
  RequestShape shape;
  shape.ask = GpuTask(0, 0, 500);
  shape.waiting = 1;
  return shape;
}

// One GPU, with `used` milli of it taken.
cluster::Machine OneGpu(int64_t used) {
  cluster::Machine machine = MachineWith(8000, 32);
  machine.devices = cluster::ExpandAccelerators({{1, "G", 1000, 0}});
  machine.devices[0].used_milli = used;
  return machine;
}

// The expected workload is the state's tasks: half and whole GPUs, half
// each.
class FragmentationTermTest : public ::testing::Test {
 protected:
  void Submit(uint64_t job, std::vector<cluster::TaskSpec> tasks) {
    ASSERT_THAT(
        state_.Apply(
            cluster::ClusterEvent{
                "e", 1, "t", cluster::JobSubmitted{JobId(job), "j", 0, tasks}},
            1, changes_),
        IsOk());
  }
  void SetUp() override {
    Submit(1, {GpuTask(1, 0, 500), GpuTask(2, 0, 500), GpuTask(3, 1, 0),
               GpuTask(4, 1, 0)});
  }
  cluster::ClusterState state_;
  cluster::ChangeSet changes_;
};

// On a free GPU half a GPU strands the other half for whole-GPU tasks
// (0.5 * 500 = +250 milli); on a half-used one it fills the hole the
// whole-GPU tasks could not use (-250).
TEST_F(FragmentationTermTest, IsTheDeltaOverItsBoundWithoutLevels) {
  FragmentationTerm term(/*levels=*/0, /*coverage=*/1);
  ASSERT_TRUE(term.Prepare(state_));
  EXPECT_DOUBLE_EQ(term.Value(OneGpu(0), HalfGpu(), 1),
                   250 / FragmentationTerm::kMaxDeltaMilli);
  EXPECT_DOUBLE_EQ(term.Value(OneGpu(500), HalfGpu(), 1),
                   -250 / FragmentationTerm::kMaxDeltaMilli);
  // Where it does not fit: 0.
  EXPECT_DOUBLE_EQ(term.Value(OneGpu(600), HalfGpu(), 1), 0);
  EXPECT_FALSE(term.depends_on_k());
}

// With L levels: (L - floor(L * sigmoid(-delta / 1000))) / L.
TEST_F(FragmentationTermTest, IsTheSigmoidScoreMadeACostWithLevels) {
  FragmentationTerm term(/*levels=*/100, /*coverage=*/1);
  ASSERT_TRUE(term.Prepare(state_));
  const auto cost = [](double delta) {
    return (100 - std::floor(100 / (1 + std::exp(delta / 1000)))) / 100;
  };
  EXPECT_DOUBLE_EQ(term.Value(OneGpu(0), HalfGpu(), 1), cost(250));
  EXPECT_DOUBLE_EQ(term.Value(OneGpu(500), HalfGpu(), 1), cost(-250));
  EXPECT_LT(term.Value(OneGpu(500), HalfGpu(), 1),
            term.Value(OneGpu(0), HalfGpu(), 1));
}

// The workload is rebuilt, and Prepare says so, only once the tasks'
// number moved by a third since the last build.
TEST_F(FragmentationTermTest, RebuildsTheWorkloadWhenTasksMoveByAThird) {
  FragmentationTerm term(/*levels=*/0, /*coverage=*/1);
  EXPECT_TRUE(term.Prepare(state_));
  EXPECT_FALSE(term.Prepare(state_));
  Submit(2, {GpuTask(5, 1, 0)});  // 5 of 4: not yet
  EXPECT_FALSE(term.Prepare(state_));
  // Still the old workload: a free GPU's half strands 250 (of 0.5).
  EXPECT_DOUBLE_EQ(term.Value(OneGpu(0), HalfGpu(), 1),
                   250 / FragmentationTerm::kMaxDeltaMilli);
  Submit(3, {GpuTask(6, 1, 0), GpuTask(7, 1, 0)});  // 7 of 4: rebuilt
  EXPECT_TRUE(term.Prepare(state_));
  // Whole GPUs are 5 of 7 now: 5/7 * 500 stranded.
  EXPECT_NEAR(term.Value(OneGpu(0), HalfGpu(), 1),
              5.0 / 7 * 500 / FragmentationTerm::kMaxDeltaMilli, 1e-12);
}

}  // namespace
}  // namespace flowsched::flow
