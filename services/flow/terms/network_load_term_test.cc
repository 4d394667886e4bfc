#include "services/flow/terms/network_load_term.h"

#include "gtest/gtest.h"
#include "services/common/byte_units.h"
#include "services/flow/terms/term_test_util.h"

namespace flowsched::flow {
namespace {

using testing::MachineWith;
using testing::ShapeAsking;

RequestShape ShapeAskingBandwidth(int64_t mib) {
  RequestShape shape = ShapeAsking(0, 0);
  shape.ask.request.network_bytes_per_sec = mib * kMiB;
  return shape;
}

// Figure 6c: the k-th task costs the link's load plus k requests, in whole
// MiB/s; the load is what is placed or what is reported, the larger.
TEST(NetworkLoadTermTest, PricesTheLoadAfterTheKthRequest) {
  const NetworkLoadTerm term;
  EXPECT_TRUE(term.depends_on_k());
  cluster::Machine machine = MachineWith(8000, 32);
  machine.capacity.network_bytes_per_sec = 1250 * kMiB;
  EXPECT_EQ(term.Value(machine, ShapeAskingBandwidth(650), 1), 650);
  EXPECT_EQ(term.Value(machine, ShapeAskingBandwidth(100), 3), 300);
  EXPECT_EQ(term.Value(machine, ShapeAskingBandwidth(0), 5), 0);
  machine.used.network_bytes_per_sec = 600 * kMiB;
  EXPECT_EQ(NetworkLoadTerm::Load(machine), 600 * kMiB);
  EXPECT_EQ(term.Value(machine, ShapeAskingBandwidth(100), 1), 700);
  machine.allocated.network_bytes_per_sec = 750 * kMiB;  // reports lag
  EXPECT_EQ(NetworkLoadTerm::Load(machine), 750 * kMiB);
  EXPECT_EQ(term.Value(machine, ShapeAskingBandwidth(100), 2), 950);
  EXPECT_EQ(term.Value(machine, ShapeAskingBandwidth(0), 1), 750);
  // Partial MiB round down, as the policy it comes from priced them.
  machine.allocated.network_bytes_per_sec = 750 * kMiB + kMiB - 1;
  EXPECT_EQ(term.Value(machine, ShapeAskingBandwidth(0), 1), 750);
}

// Links beyond 512 Gbit/s all look full: the bound CheckProfile prices.
TEST(NetworkLoadTermTest, StopsAtItsBound) {
  const NetworkLoadTerm term;
  cluster::Machine machine = MachineWith(8000, 32);
  machine.used.network_bytes_per_sec = int64_t{1} << 40;
  EXPECT_EQ(term.Value(machine, ShapeAskingBandwidth(100), 1),
            NetworkLoadTerm::kMaxMiBps);
  EXPECT_EQ(term.Value(machine, ShapeAskingBandwidth(100), 999),
            NetworkLoadTerm::kMaxMiBps);
}

}  // namespace
}  // namespace flowsched::flow
