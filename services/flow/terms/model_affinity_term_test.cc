#include "services/flow/terms/model_affinity_term.h"

#include "gtest/gtest.h"
#include "services/flow/terms/term_test_util.h"

namespace flowsched::flow {
namespace {

using testing::MachineWith;
using testing::ShapeAsking;

cluster::Machine WithDevices(std::vector<cluster::AcceleratorGroup> groups) {
  cluster::Machine machine = MachineWith(8000, 32);
  machine.devices = cluster::ExpandAccelerators(groups);
  return machine;
}

RequestShape AskingGpus(std::vector<std::string> preferred,
                        std::optional<std::vector<std::string>> models = {}) {
  RequestShape shape = ShapeAsking(1000, 1);
  shape.ask.accelerator.whole = 1;
  shape.ask.accelerator.models = std::move(models);
  shape.ask.accelerator.preferred_models = std::move(preferred);
  return shape;
}

// The devices the fit rule gives one task: a free preferred one first.
TEST(ModelAffinityTermTest, IsTheShareOfTheGivenDevicesNotPreferred) {
  const ModelAffinityTerm term;
  const cluster::Machine v100 = WithDevices({{4, "V100", 1000, 0}});
  const cluster::Machine a10 = WithDevices({{4, "A10", 1000, 0}});
  cluster::Machine mixed =
      WithDevices({{1, "V100", 1000, 0}, {3, "A10", 1000, 0}});
  const RequestShape one = AskingGpus({"V100"});
  EXPECT_DOUBLE_EQ(term.Value(v100, one, 1), 0);
  EXPECT_DOUBLE_EQ(term.Value(a10, one, 1), 1);
  EXPECT_DOUBLE_EQ(term.Value(mixed, one, 1), 0);
  RequestShape two = one;
  two.ask.accelerator.whole = 2;
  EXPECT_DOUBLE_EQ(term.Value(mixed, two, 1), 0.5);
  // The second task gets an A10: the V100 went to the first.
  EXPECT_DOUBLE_EQ(term.Value(mixed, one, 2), 1);
  EXPECT_DOUBLE_EQ(term.Value(v100, one, 4), 0);
  // Past the devices that fit: the last share.
  EXPECT_DOUBLE_EQ(term.Value(mixed, one, 9), 1);
  // With its V100 in use the machine can only give A10s.
  mixed.devices[0].used_milli = 1000;
  EXPECT_DOUBLE_EQ(term.Value(mixed, one, 1), 1);
  EXPECT_TRUE(term.depends_on_k());
  // Only shapes that prefer a model are priced by k.
  EXPECT_TRUE(term.DependsOnK(one));
  EXPECT_FALSE(term.DependsOnK(AskingGpus({})));
  EXPECT_FALSE(term.DependsOnK(ShapeAsking(1000, 1)));
}

// Fractions share a preferred device until it is full: four quarter-GPU
// tasks fit the V100, the fifth takes an A10.
TEST(ModelAffinityTermTest, FractionsFillThePreferredDeviceFirst) {
  const ModelAffinityTerm term;
  const cluster::Machine mixed =
      WithDevices({{1, "V100", 1000, 0}, {1, "A10", 1000, 0}});
  RequestShape quarter = AskingGpus({"V100"});
  quarter.ask.accelerator.whole = 0;
  quarter.ask.accelerator.milli = 250;
  for (int64_t k = 1; k <= 4; ++k) {
    EXPECT_DOUBLE_EQ(term.Value(mixed, quarter, k), 0) << k;
  }
  EXPECT_DOUBLE_EQ(term.Value(mixed, quarter, 5), 1);
}

// Devices the ask does not accept are never given; no preference, no ask,
// or no fit: 0.
TEST(ModelAffinityTermTest, CountsOnlyGivenDevicesAndOnlyPreferences) {
  const ModelAffinityTerm term;
  const cluster::Machine mixed = WithDevices(
      {{1, "V100", 1000, 0}, {1, "A10", 1000, 0}, {2, "T4", 1000, 0}});
  RequestShape two =
      AskingGpus({"V100"}, std::vector<std::string>{"V100", "A10"});
  two.ask.accelerator.whole = 2;
  EXPECT_DOUBLE_EQ(term.Value(mixed, two, 1), 0.5);
  EXPECT_DOUBLE_EQ(term.Value(mixed, AskingGpus({}), 1), 0);
  EXPECT_DOUBLE_EQ(term.Value(mixed, ShapeAsking(1000, 1), 1), 0);
  EXPECT_DOUBLE_EQ(
      term.Value(mixed, AskingGpus({"H100"}, std::vector<std::string>{"H100"}),
                 1),
      0);
}

}  // namespace
}  // namespace flowsched::flow
